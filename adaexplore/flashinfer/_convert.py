"""The side of the FlashInfer-Bench format that imports the package (and torch with it): run as
`python -m adaexplore.flashinfer._convert`, one JSON request on standard input, one JSON answer on standard
output. The package's own models parse and validate everything; nothing here parses the format by hand.

Requests: {"op": "import", "definition": PATH, "workloads": [PATH, ...] | null},
{"op": "export", "definition": NAME, "name": NAME, "code": TEXT, "description": TEXT, "out": PATH} and
{"op": "solution", "definition": PATH, "solution": PATH} (a Solution as a candidate module).
Answers: {"ok": true, ...} or {"ok": false, "error": TEXT, "missing": BOOL}.
"""

from __future__ import annotations

import ast
import base64
import gc
import json
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from adaexplore.errors import TaskError

__all__ = ["main"]

EXTRA = "flashinfer"


class Refused(Exception):
    """The input is not usable; the message says why, in the user's words."""


def _validation(what: str, exc: Exception) -> Refused:
    """A pydantic ValidationError of the package's models as its own messages with their field paths (no links)."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return Refused(f"{what}: {exc}")
    parts = []
    for error in errors():
        where = ".".join(str(part) for part in error.get("loc", ())) or "(the whole object)"
        parts.append(f"{where}: {error.get('msg', '')}")
    return Refused(f"{what} does not validate: " + "; ".join(parts))


def _json(path: Path, what: str) -> Any:
    if not path.is_file():
        raise Refused(f"{what} {path} " + ("is a directory" if path.is_dir() else "does not exist"))
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise Refused(f"{what} {path} is not JSON: {exc}") from None


def _root(path: Path, folder: str) -> Path:
    """The trace set's root of a file under its `folder` (definitions, workloads); else the file's folder."""
    for parent in path.resolve().parents:
        if parent.name == folder:
            return parent.parent
    return path.resolve().parent


def _load_definition(path: Path) -> Any:
    from flashinfer_bench.data import Definition

    data = _json(path, "definition")
    try:
        return Definition.model_validate(data)
    except Exception as exc:  # the package's ValidationError
        raise _validation(f"definition {path}", exc) from None


def _workloads_in(path: Path, name: str) -> list[tuple[Any, Path]]:
    """The workloads of definition `name` in a file (.jsonl of workload traces, .json of a trace or a workload)."""
    from flashinfer_bench.data import Trace, Workload

    if path.suffix == ".jsonl":
        if not path.is_file():
            raise Refused(f"workload file {path} does not exist")
        found = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                trace = Trace.model_validate_json(line)
            except Exception as exc:
                raise _validation(f"workload file {path}, line {number}", exc) from None
            if trace.definition == name and trace.is_workload_trace():
                found.append((trace.workload, path))
        return found
    data = _json(path, "workload file")
    model: Any = Trace if isinstance(data, dict) and "workload" in data else Workload
    try:
        parsed = model.model_validate(data)
    except Exception as exc:
        raise _validation(f"workload file {path}", exc) from None
    if isinstance(parsed, Trace):
        return [(parsed.workload, path)] if parsed.definition == name else []
    return [(parsed, path)]


def _find_workloads(definition: Any, definition_path: Path, given: list[str] | None) -> list[tuple[Any, Path]]:
    if given:
        paths = [Path(p) for p in given]
    else:  # the trace set's own: workloads/**/*.jsonl beside definitions/
        folder = _root(definition_path, "definitions") / "workloads"
        paths = [folder] if folder.is_dir() else []
        if not paths:
            raise Refused(
                f"definition {definition.name}: no workloads given and no workloads/ folder beside its definitions/; "
                "give --workload FILE or --workloads DIR"
            )
    found: list[tuple[Any, Path]] = []
    for path in paths:
        if path.is_dir():
            for file in sorted([*path.rglob("*.jsonl"), *path.rglob("*.json")]):
                found += _workloads_in(file, definition.name)
        elif path.exists():
            found += _workloads_in(path, definition.name)
        else:
            raise Refused(f"workload file {path} does not exist")
    if not found:
        where = ", ".join(str(p) for p in paths)
        raise Refused(f"no workload of definition {definition.name} in {where}")
    return found


def _check_workload(definition: Any, workload: Any) -> None:
    var_axes = set(definition.var_axes)
    given = set(workload.axes)
    if given != var_axes:
        missing, extra = sorted(var_axes - given), sorted(given - var_axes)
        said = ([f"lacks {missing}"] if missing else []) + (
            [f"has axes the definition lacks: {extra}"] if extra else []
        )
        raise Refused(
            f"workload {workload.uuid} does not match definition {definition.name}: it "
            + " and ".join(said)
            + f" (the definition's var axes are {sorted(var_axes)})"
        )
    unknown = sorted(set(workload.inputs) - set(definition.inputs))
    if unknown:
        raise Refused(
            f"workload {workload.uuid} gives inputs {unknown} that definition {definition.name} does not have "
            f"(its inputs are {list(definition.inputs)})"
        )
    for name, spec in workload.inputs.items():
        if spec.type == "scalar" and definition.inputs[name].shape is not None:
            raise Refused(
                f"workload {workload.uuid} gives input {name} as a scalar, but definition {definition.name} gives it "
                f"the shape {definition.inputs[name].shape}"
            )


def _tensors(definition: Any, workload: Any, root: Path) -> dict[str, tuple[str, list[int], str]]:
    import torch
    from flashinfer_bench.bench.utils import load_safetensors

    files = {name: spec for name, spec in workload.inputs.items() if spec.type == "safetensors"}
    if not files:
        return {}
    for name, spec in files.items():
        path = Path(spec.path) if Path(spec.path).is_absolute() else root / spec.path
        if not path.is_file():
            raise Refused(
                f"workload {workload.uuid}: input {name} comes from the safetensors file {spec.path}, which does not "
                f"exist (read as {path}; a workload's paths are relative to its trace set's root, {root})"
            )
    try:
        loaded = load_safetensors(definition, workload, root)
    except (ValueError, RuntimeError, OSError) as exc:
        raise Refused(f"workload {workload.uuid}: {exc}") from None
    encoded = {}
    for name, tensor in loaded.items():
        tensor = tensor.contiguous()
        raw = tensor.view(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b""
        dtype = str(tensor.dtype).removeprefix("torch.")
        encoded[name] = (dtype, list(tensor.shape), base64.b64encode(raw).decode("ascii"))
    return encoded


def _tolerance() -> dict[str, float]:
    from flashinfer_bench.bench import BenchmarkConfig

    config = BenchmarkConfig()
    if config.required_matched_ratio is not None:
        raise Refused(
            "this flashinfer-bench's default evaluator passes an output when only a share of its elements match "
            f"({config.required_matched_ratio}); adaexplore holds every element to the tolerance and cannot follow it"
        )
    return {"atol": float(config.atol), "rtol": float(config.rtol)}


def _import(request: dict[str, Any]) -> dict[str, Any]:
    from adaexplore.flashinfer._module import WorkloadData, task_module

    path = Path(request["definition"])
    definition = _load_definition(path)
    data = []
    for workload, file in _find_workloads(definition, path, request.get("workloads")):
        _check_workload(definition, workload)
        root = _root(file, "workloads")
        scalars = {n: s.value for n, s in workload.inputs.items() if s.type == "scalar"}
        data.append(
            WorkloadData(
                uuid=workload.uuid,
                axes=dict(workload.axes),
                scalars=scalars,
                tensors=_tensors(definition, workload, root),
            )
        )
    uuids = [w.uuid for w in data]
    if len(set(uuids)) != len(uuids):
        raise Refused(f"definition {definition.name}: two workloads share a uuid; each must have its own")
    package = metadata.version("flashinfer-bench")
    source = task_module(definition.model_dump(mode="json"), data, _tolerance(), package)
    return {"ok": True, "name": definition.name, "source": source, "workloads": len(data), "package": package}


def _export(request: dict[str, Any]) -> dict[str, Any]:
    from flashinfer_bench.data import BuildSpec, Solution, SourceFile, save_json_file

    try:
        solution = Solution(
            name=request["name"],
            definition=request["definition"],
            author="adaexplore",
            spec=BuildSpec(
                language="triton",
                target_hardware=["cuda"],
                entry_point=f"{request['file']}::{request['entry']}",
                destination_passing_style=False,
            ),
            sources=[SourceFile(path=request["file"], content=request["code"])],
            description=request["description"],
        )
    except Exception as exc:
        raise _validation("the solution", exc) from None
    out = Path(request["out"])
    out.parent.mkdir(parents=True, exist_ok=True)
    save_json_file(solution, out)
    return {"ok": True, "path": str(out), "solution": solution.name}


def _defines_model_new(code: str) -> bool:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    return any(isinstance(node, ast.ClassDef) and node.name == "ModelNew" for node in tree.body)


def _solution(request: dict[str, Any]) -> dict[str, Any]:
    """A FlashInfer-Bench Solution as a candidate module: its one source file with a ModelNew around its entry
    point (value-returning, or with the outputs allocated for a destination-passing one)."""
    from flashinfer_bench.data import Solution

    path = Path(request["solution"])
    try:
        solution = Solution.model_validate(_json(path, "solution"))
    except Refused:
        raise
    except Exception as exc:
        raise _validation(f"solution {path}", exc) from None
    definition = _load_definition(Path(request["definition"]))
    language = solution.spec.language.value
    if language not in ("triton", "python"):
        raise Refused(
            f"solution {solution.name} is written in {language}; adaexplore evaluates Triton kernels (and Python "
            "around them), so it cannot run it"
        )
    if solution.definition != definition.name:
        raise Refused(f"solution {solution.name} is for definition {solution.definition}, not {definition.name}")
    if len(solution.sources) != 1:
        raise Refused(
            f"solution {solution.name} has {len(solution.sources)} source files; adaexplore evaluates a kernel as "
            "one module, so its sources must be one file"
        )
    code = solution.sources[0].content.rstrip() + "\n"
    if _defines_model_new(code):  # written as a candidate already (by `adaexplore export`, say): taken as it is
        return {"ok": True, "code": code, "name": solution.name, "language": language}
    entry = solution.get_entry_symbol()
    params = list(definition.inputs)
    lines = [
        "",
        "",
        f"# ---- ModelNew around the entry point of FlashInfer-Bench solution {solution.name} (added by adaexplore)",
        "class ModelNew(torch.nn.Module):",
        f"    def forward(self, {', '.join(params)}):",
    ]
    if solution.spec.destination_passing_style:
        bindings = definition.var_axes_bindings
        for axis in definition.var_axes:
            if axis not in bindings:
                raise Refused(
                    f"solution {solution.name} takes its outputs as arguments, and the output axis {axis} of "
                    f"definition {definition.name} is no input's dimension, so adaexplore cannot size them"
                )
            tensor, dim = bindings[axis]
            lines.append(f"        {axis} = {tensor}.shape[{dim}]")
        device = next(n for n, spec in definition.inputs.items() if spec.shape is not None)
        outputs = []
        for name, spec in definition.outputs.items():
            dims = [str(definition.axes[a].value) if a in definition.const_axes else a for a in spec.shape or []]
            shape = f"({dims[0]},)" if len(dims) == 1 else "(" + ", ".join(dims) + ")"
            lines.append(
                f"        {name} = torch.empty({shape}, dtype=torch.{spec.dtype.value}, device={device}.device)"
            )
            outputs.append(name)
        lines.append(f"        {entry}({', '.join(params + outputs)})")
        lines.append(f"        return {outputs[0] if len(outputs) == 1 else '(' + ', '.join(outputs) + ')'}")
    else:
        lines.append(f"        return {entry}({', '.join(params)})")
    if "import torch\n" not in code:
        code = "import torch\n" + code
    return {"ok": True, "code": code + "\n".join(lines) + "\n", "name": solution.name, "language": language}


def main() -> int:
    request = json.loads(sys.stdin.read())
    # the package imports torch: some 300,000 objects, which the collector would look through again and again as
    # they come (a fifth of this process's CPU time); it is on again, past them, for the request itself
    gc.disable()
    try:
        import flashinfer_bench  # noqa: F401
    except ImportError as exc:
        answer = {
            "ok": False,
            "missing": True,
            "error": f"the FlashInfer-Bench format needs the flashinfer-bench package ({exc}); install "
            f"adaexplore's '{EXTRA}' extra: pip install 'adaexplore[{EXTRA}]'",
        }
    else:
        gc.freeze()
        gc.enable()
        try:
            operations = {"import": _import, "export": _export, "solution": _solution}
            answer = operations[request["op"]](request)
        except Refused as exc:
            answer = {"ok": False, "missing": False, "error": str(exc)}
        except TaskError as exc:  # the definition cannot be written as a task module
            answer = {"ok": False, "missing": False, "task": True, "error": str(exc)}
        except Exception as exc:  # a fault of ours or of the package: said as one, with its type
            answer = {"ok": False, "missing": False, "fault": True, "error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
