"""FlashInfer-Bench's format: a Definition and its Workloads in, as a task; a run's best kernel out, as a Solution.

The `flashinfer-bench` package's own models parse and validate both ways (adaexplore's `flashinfer` extra). They
import torch, which the caller's process never does, so they run in a process of their own
(`adaexplore.flashinfer._convert`); nothing of the format is parsed here. That process only reads the files it
is given and writes the one it is asked to: it runs no code of the definition's (its reference runs in the
evaluator's sandboxed judge, like any task's).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adaexplore.errors import EvaluatorError, RequestError, TaskError
from adaexplore.executor import module_assignment

__all__ = [
    "ENTRY_FILE",
    "Imported",
    "definition_files",
    "entry_wrapper",
    "export_solution",
    "import_definition",
    "is_trace_set",
    "solution_candidate",
    "solution_definition",
    "task_definition",
]

ENTRY_FILE = "kernel.py"
_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Imported:
    name: str  # the definition's name
    source: str  # the task module's text
    workloads: int
    package: str  # the flashinfer-bench version that read it


def _ask(request: dict[str, object]) -> dict[str, Any]:
    """One request to the converter's process: its JSON answer.

    Raises:
        RequestError: the package is missing (the message names the extra), or the input is unusable.
        TaskError: the definition cannot be written as a task module.
        EvaluatorError: the converter's process failed on its own.
    """
    try:
        done = subprocess.run(
            [sys.executable, "-m", "adaexplore.flashinfer._convert"],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            timeout=_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise EvaluatorError(f"reading the FlashInfer-Bench files took longer than {_TIMEOUT_S:.0f} s") from None
    try:
        answer = json.loads(done.stdout)
    except json.JSONDecodeError:
        tail = done.stderr.strip().splitlines()[-5:]
        raise EvaluatorError(
            f"the process reading the FlashInfer-Bench files failed (exit code {done.returncode}): " + " / ".join(tail)
        ) from None
    if not answer.get("ok"):
        if answer.get("task"):
            raise TaskError(str(answer["error"]))
        if answer.get("fault"):
            raise EvaluatorError(f"reading the FlashInfer-Bench files failed: {answer['error']}")
        raise RequestError(str(answer["error"]))
    return answer


def import_definition(definition: str | Path, workloads: Sequence[str | Path] | None = None) -> Imported:
    """The task module of a FlashInfer-Bench Definition file with its workloads: `workloads` lists workload
    files (.jsonl of workload traces, or .json of one) and folders of them; by default, the `workloads/` folder
    of the trace set the definition is in.

    Raises:
        RequestError: the package is missing, a file is missing or does not validate (the package's message with
            its field path), a workload does not match the definition, or a safetensors file is missing.
        TaskError: the definition cannot be a task module (its names cannot be Python names).
    """
    path = Path(definition).resolve()
    if not path.is_file():  # said at once, without the seconds of starting the package's process (torch) for it
        raise RequestError(f"definition {path} " + ("is a directory" if path.is_dir() else "does not exist"))
    request: dict[str, object] = {
        "op": "import",
        "definition": str(path),
        "workloads": [str(Path(w).resolve()) for w in workloads] if workloads else None,
    }
    answer = _ask(request)
    return Imported(
        name=str(answer["name"]),
        source=str(answer["source"]),
        workloads=int(answer["workloads"]),
        package=str(answer["package"]),
    )


def task_definition(source: str) -> dict[str, object] | None:
    """The FLASHINFER literal of a task module written by `import_definition` (its definition's name, the
    workloads' uuids, the package's version), or None for any other task."""
    node = module_assignment(source, "FLASHINFER")
    if node is None:
        return None
    try:
        value = ast.literal_eval(node.value)
    except ValueError:
        return None
    return value if isinstance(value, dict) and "definition" in value else None


def _forward_params(task_source: str) -> list[str]:
    for node in ast.parse(task_source).body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "forward":
                    return [a.arg for a in item.args.args][1:]
    raise TaskError("the task module has no Model.forward")


def _defines(code: str, name: str) -> bool:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    return any(
        (isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name == name)
        or (isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in n.targets))
        for n in tree.body
    )


def entry_wrapper(code: str, task_source: str) -> tuple[str, str]:
    """The kernel's module with a FlashInfer-Bench entry point appended, and that entry point's name: a function
    taking the definition's inputs in order that builds ModelNew once (on the first tensor's device) and returns
    what its forward returns (value-returning style)."""
    params = _forward_params(task_source)
    entry = "run" if not _defines(code, "run") else "adaexplore_run"
    holder = "_adaexplore_model"
    args = ", ".join(params)
    tensors = f"({args},)" if len(params) == 1 else f"({args})"
    wrapper = f"""

# ---- FlashInfer-Bench's entry point, added by `adaexplore export` ----
{holder} = None


def {entry}({args}):
    global {holder}
    if {holder} is None:
        device = next((a.device for a in {tensors} if isinstance(a, torch.Tensor)), None)
        {holder} = ModelNew().to(device) if device is not None else ModelNew()
    with torch.no_grad():
        return {holder}({args})
"""
    needs_torch = "import torch" not in code
    return ("import torch\n" if needs_torch else "") + code.rstrip() + "\n" + wrapper, entry


def export_solution(*, code: str, task_source: str, name: str, description: str, out: str | Path) -> Path:
    """Write `code` (a kernel of a task imported from FlashInfer-Bench) as a FlashInfer-Bench Solution to `out`.

    Raises:
        RequestError: the task was not imported from FlashInfer-Bench, or the package is missing.
    """
    meta = task_definition(task_source)
    if meta is None:
        raise RequestError(
            "this run's task was not imported from a FlashInfer-Bench definition, so its kernel cannot be a "
            "Solution of one; import the definition with `adaexplore create-task --flashinfer DEFINITION.json`"
        )
    content, entry = entry_wrapper(code, task_source)
    answer = _ask(
        {
            "op": "export",
            "definition": meta["definition"],
            "name": name,
            "code": content,
            "file": ENTRY_FILE,
            "entry": entry,
            "description": description,
            "out": str(Path(out).resolve()),
        }
    )
    return Path(str(answer["path"]))


def solution_candidate(solution: str | Path, definition: str | Path) -> str:
    """A FlashInfer-Bench Solution file as a candidate module for the task of `definition`: its source with a
    ModelNew around its entry point.

    Raises:
        RequestError: the solution does not validate, is for another definition, is not written in Triton (or
            Python), or has more than one source file; or the package is missing.
    """
    answer = _ask(
        {"op": "solution", "solution": str(Path(solution).resolve()), "definition": str(Path(definition).resolve())}
    )
    return str(answer["code"])


def solution_definition(path: Path) -> str | None:
    """The definition a Solution file names (its `definition` field), to match a replay folder's solutions with a
    suite's problems before each is validated; None for a file that is not a JSON object naming one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    name = data.get("definition") if isinstance(data, dict) else None
    return name if isinstance(name, str) and "sources" in data else None


def is_trace_set(folder: Path) -> bool:
    """Whether `folder` is a FlashInfer-Bench trace set (it holds a definitions/ folder of JSON files)."""
    return (folder / "definitions").is_dir() and any((folder / "definitions").rglob("*.json"))


def definition_files(folder: Path) -> list[Path]:
    """The definition files of a trace set, in the order of their names (the problems of a bench over it)."""
    return sorted((folder / "definitions").rglob("*.json"), key=lambda p: (p.stem, str(p)))
