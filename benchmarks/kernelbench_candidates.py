"""Pass-through candidates for KernelBench problems: the reference's own PyTorch operations, whose output
is copied through one plain Triton kernel on every forward. Correct by construction, with the problem's
real output sizes, so an evaluation of one measures the evaluator rather than a kernel.

    from benchmarks.kernelbench_candidates import pass_through, read_problems
    code = pass_through(problem_source)

As a command, it writes them as a replay directory for `adaexplore bench` (one `ID.py` per problem):

    python benchmarks/kernelbench_candidates.py --level-dir ../shared/data/kernelbench/level2 --ids 1-20 --out kernels
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Problem", "output_bytes", "parse_ids", "pass_through", "policy_problems", "read_problems"]

# Names the generated code adds to the module; a problem that already uses one cannot be passed through.
_COPY_KERNEL = "_pass_through_copy_kernel"
_COPY = "_pass_through_copy"
_COPIED = "_pass_through_outputs"
_TORCH_FORWARD = "_reference_forward"
_ADDED = (_COPY_KERNEL, _COPY, _COPIED, _TORCH_FORWARD, "ModelNew", "triton", "tl")

# One elementwise copy kernel; the offsets are 64-bit, since some outputs pass 2**31 bytes.
_HELPERS = f"""
@triton.jit
def {_COPY_KERNEL}(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


def {_COPY}(x):
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n > 0:
        {_COPY_KERNEL}[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
    return y


def {_COPIED}(out):
    if isinstance(out, torch.Tensor):
        return {_COPY}(out)
    if isinstance(out, tuple):
        return tuple({_COPIED}(item) for item in out)
    if isinstance(out, list):
        return [{_COPIED}(item) for item in out]
    return out
"""


@dataclass(frozen=True)
class Problem:
    """One KernelBench problem file: `12_Gemm_Multiply_LeakyReLU.py` is id 12, name `Gemm_Multiply_LeakyReLU`."""

    id: int
    name: str
    path: Path

    @property
    def stem(self) -> str:
        return self.path.stem

    def source(self) -> str:
        return self.path.read_text(encoding="utf-8-sig")


def read_problems(level_dir: Path) -> list[Problem]:
    """The level's problems, by id."""
    found = []
    for path in level_dir.glob("*.py"):
        match = re.fullmatch(r"(\d+)_(.+)", path.stem)
        if match:
            found.append(Problem(int(match.group(1)), match.group(2), path))
    return sorted(found, key=lambda p: p.id)


def parse_ids(text: str | None) -> set[int] | None:
    """`"1-10,17"` -> {1, ..., 10, 17}; None or empty: every id."""
    if not text:
        return None
    ids: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        low, _, high = part.partition("-")
        ids.update(range(int(low), int(high or low) + 1))
    return ids


class _Rename(ast.NodeTransformer):
    """Model -> ModelNew wherever the module names it (the class, `super(Model, self)`, helpers)."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id == "Model":
            return ast.copy_location(ast.Name(id="ModelNew", ctx=node.ctx), node)
        return node


def _forward_call(forward: ast.FunctionDef) -> ast.FunctionDef:
    """A forward with the reference's own signature, which runs the reference's operations (renamed) and
    copies what they return through the Triton kernel."""
    args = forward.args
    positional = [ast.Name(id=a.arg, ctx=ast.Load()) for a in args.posonlyargs + args.args][1:]
    if args.vararg:
        positional.append(ast.Starred(value=ast.Name(id=args.vararg.arg, ctx=ast.Load()), ctx=ast.Load()))
    keywords = [ast.keyword(arg=a.arg, value=ast.Name(id=a.arg, ctx=ast.Load())) for a in args.kwonlyargs]
    if args.kwarg:
        keywords.append(ast.keyword(arg=None, value=ast.Name(id=args.kwarg.arg, ctx=ast.Load())))
    inner = ast.Call(
        func=ast.Attribute(value=ast.Name(id="self", ctx=ast.Load()), attr=_TORCH_FORWARD, ctx=ast.Load()),
        args=positional,
        keywords=keywords,
    )
    body = [ast.Return(value=ast.Call(func=ast.Name(id=_COPIED, ctx=ast.Load()), args=[inner], keywords=[]))]
    return ast.FunctionDef(name="forward", args=args, body=body, decorator_list=[], returns=None, type_params=[])


def pass_through(problem_source: str) -> str:
    """The pass-through candidate of a KernelBench problem's source (a module defining `ModelNew`).

    Raises:
        ValueError: the source has no `class Model` with a `forward`, or already uses a name this adds.
    """
    tree = ast.parse(problem_source.removeprefix("\ufeff"))
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    used |= {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    clash = sorted(used & set(_ADDED))
    if clash:
        raise ValueError(f"the problem already uses {', '.join(clash)}")
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    if model is None:
        raise ValueError("the problem defines no top-level class Model")
    forward = next((n for n in model.body if isinstance(n, ast.FunctionDef) and n.name == "forward"), None)
    if forward is None:
        raise ValueError("class Model has no forward method")
    tree = _Rename().visit(tree)
    model.name = "ModelNew"
    wrapper = _forward_call(forward)
    forward.name = _TORCH_FORWARD
    model.body.insert(model.body.index(forward) + 1, wrapper)
    imports_end = 0
    for index, node in enumerate(tree.body):
        if isinstance(node, ast.Import | ast.ImportFrom):
            imports_end = index + 1
        elif not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):  # a docstring
            break
    added = ast.parse("import triton\nimport triton.language as tl\n" + _HELPERS).body
    tree.body[imports_end:imports_end] = added
    ast.fix_missing_locations(tree)
    return ast.unparse(tree) + "\n"


def policy_problems(code: str, task_source: str | None = None) -> list[str]:
    """What the project's policy says against a candidate's source (empty: clean), with what its task's own
    imports grant it (numpy, einops) where `task_source` is given, as the evaluator checks it."""
    from adaexplore.executor.policy import check_policy, defines_model_new, task_grants

    tree = ast.parse(code)
    grants = task_grants(task_source)
    found = [f"line {v.line}: {v.code}: {v.message}" for v in check_policy(tree, source=code, grants=grants)]
    if not defines_model_new(tree):
        found.append("defines no ModelNew")
    return found


def output_bytes(problem_source: str) -> int | None:
    """Bytes of the reference's output(s) at full size, found on PyTorch's meta device (shapes only, no
    memory, no compute); None where an operation has no meta implementation or the module misbehaves."""
    import torch

    namespace: dict[str, object] = {"__name__": "kernelbench_problem"}
    try:
        with torch.device("meta"):
            exec(compile(problem_source, "<problem>", "exec"), namespace)  # a benchmark's own data, not a candidate
            model = namespace["Model"](*namespace["get_init_inputs"]())  # type: ignore[operator]
            inputs = namespace["get_inputs"]()  # type: ignore[operator]
            with torch.no_grad():
                out = model(*inputs)
    except Exception:
        return None
    tensors = list(out) if isinstance(out, tuple | list) else [out]
    if not all(isinstance(t, torch.Tensor) for t in tensors):
        return None
    return sum(t.numel() * t.element_size() for t in tensors)


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description="write pass-through candidates, one ID.py per problem")
    parser.add_argument("--level-dir", type=Path, required=True, help="a KernelBench level's directory")
    parser.add_argument("--ids", help="problems by number, like 1-10,17 (default: all)")
    parser.add_argument("--out", type=Path, required=True, help="the directory to write the kernels to")
    args = parser.parse_args(argv)
    wanted = parse_ids(args.ids)
    args.out.mkdir(parents=True, exist_ok=True)
    written = skipped = 0
    for problem in read_problems(args.level_dir):
        if wanted is not None and problem.id not in wanted:
            continue
        try:
            code = pass_through(problem.source())
        except ValueError as exc:
            print(f"{problem.id}: no pass-through candidate ({exc})")
            skipped += 1
            continue
        (args.out / f"{problem.id}.py").write_text(code)
        written += 1
    print(f"{written} kernels written to {args.out}" + (f", {skipped} problems skipped" if skipped else ""))


if __name__ == "__main__":
    main()
