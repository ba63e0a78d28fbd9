"""A kernel whose grid covers a fixed number of elements, on every KernelBench Level 2 problem: does the full-size
coverage check find it wherever the problem's output is larger, and pass the same kernel with a grid computed from
the sizes?

For each problem, two candidates are made from the problem's own module: its `Model` computes the output in
PyTorch, and a Triton kernel copies it into the output `torch.empty_like` made, over a grid of one program of 1,024
elements (`fixed`) or of `triton.cdiv(n, 1024)` programs (`sized`). At small sizes both are correct wherever the
output holds at most 1,024 elements; at the problem's full sizes the check must find `fixed` wherever the output is
larger, and nothing in `sized`. Each candidate is followed as `benchmarks/coverage_corpus.py --one` follows it, all
of them in one process (about 10 minutes for the 100 problems on 2 cores).

    python benchmarks/coverage_scan.py --kernelbench ../shared/data/kernelbench
    python benchmarks/coverage_scan.py --only 12_ 30_ --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CANDIDATE = """

import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def _copied(y):
    y = y.contiguous()
    out = torch.empty_like(y)
    n = y.numel()
    _copy_kernel[GRID](y, out, n, BLOCK=1024)
    return out


class ModelNew(Model):
    def forward(self, *args):
        y = super().forward(*args)
        if isinstance(y, (tuple, list)):
            return type(y)(_copied(t) for t in y)
        return _copied(y)
"""


def _output_elements(problem: Path) -> int | None:
    import importlib.util

    import torch

    spec = importlib.util.spec_from_file_location("scanned_problem", problem)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        with torch.device("meta"):
            spec.loader.exec_module(module)
            out = module.Model(*module.get_init_inputs())(*module.get_inputs())
    except Exception:
        return None
    outs = out if isinstance(out, tuple | list) else [out]
    return sum(math.prod(t.shape) for t in outs)


def _follow_all(pairs: list[tuple[Path, Path]]) -> None:
    """Follow each (problem, candidate) in this process, one JSON line each (as `coverage_corpus.py --one`)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from coverage_corpus import one

    for problem, candidate in pairs:
        try:
            found = one(str(problem), str(candidate))
        except Exception as exc:
            found = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
        print(json.dumps(found), flush=True)


def _follow(pairs: list[tuple[Path, Path]], cache: Path, timeout_s: float) -> list[dict]:
    env = {**os.environ, "TRITON_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    listed = json.dumps([[str(a), str(b)] for a, b in pairs])
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--all", listed],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=env,
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired:
        return [{"error": f"took over {timeout_s:.0f} s"}] * len(pairs)
    lines = [line for line in done.stdout.strip().splitlines() if line.startswith("{")]
    if len(lines) != len(pairs):
        error = (done.stderr.strip().splitlines() or ["no output"])[-1][:200]
        return [json.loads(line) for line in lines] + [{"error": error}] * (len(pairs) - len(lines))
    return [json.loads(line) for line in lines]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernelbench", type=Path, default=ROOT.parent / "shared" / "data" / "kernelbench")
    parser.add_argument("--only", nargs="*", default=[], help="problems whose file name holds one of these")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds for the whole scan")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--all", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.all:
        _follow_all([(Path(a), Path(b)) for a, b in json.loads(args.all)])
        return
    problems = sorted((args.kernelbench / "level2").glob("*.py"))
    if not problems:
        sys.exit(f"KernelBench's Level 2 problems are not at {args.kernelbench}/level2: pass --kernelbench DIR")
    problems = [p for p in problems if not args.only or any(part in p.name for part in args.only)]
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for problem in problems:
            row: dict = {"problem": problem.name, "elements": _output_elements(problem)}
            pairs = []
            for kind, grid in (("fixed", "(1,)"), ("sized", "(triton.cdiv(n, 1024),)")):
                candidate = folder / f"{kind}_{problem.name}"
                candidate.write_text(problem.read_text() + CANDIDATE.replace("GRID", grid))
                pairs.append((problem, candidate))
            row["pairs"] = pairs
            rows.append(row)
        found = _follow([pair for row in rows for pair in row.pop("pairs")], folder / "cache", args.timeout)
        for row, fixed, sized in zip(rows, found[0::2], found[1::2], strict=True):
            for kind, result in (("fixed", fixed), ("sized", sized)):
                row[kind] = (
                    "error: " + result["error"][:60] if "error" in result else ("gap" if result["gaps"] else "none")
                )
                row[f"{kind}_s"] = result.get("check_s")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2))
    larger = [r for r in rows if r["elements"] is not None and r["elements"] > 1024]
    missed = [r["problem"] for r in larger if r["fixed"] != "gap"]
    false = [r["problem"] for r in rows if r["sized"] != "none"]
    print(f"{'problem':60} {'outputs':>12} {'fixed grid':>11} {'sized grid':>11}")
    for r in rows:
        print(f"{r['problem']:60} {r['elements'] or 0:12,} {r['fixed']:>11} {r['sized']:>11}")
    print(
        f"{len(rows)} problems, {len(larger)} with more than 1,024 output elements: the fixed grid found on "
        f"{len(larger) - len(missed)} of them (missed: {missed or 'none'}); the sized grid found on "
        f"{len(false)} (must be 0: {false or 'none'})"
    )


if __name__ == "__main__":
    main()
