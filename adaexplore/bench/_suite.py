"""Suites: a directory of KernelBench-format problems (`17_Name.py`), a FlashInfer-Bench trace set (its
definitions, numbered in the order of their names), or `examples` (the tasks shipped with adaexplore); the problems
picked by `--ids`; and a replay directory's kernels matched to them."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from adaexplore import tools
from adaexplore.errors import RequestError
from adaexplore.flashinfer import definition_files, is_trace_set, solution_definition
from adaexplore.listing import first_of

__all__ = ["EXAMPLES", "Problem", "Suite", "examples_dir", "parse_ids", "read_suite", "replay_files"]

EXAMPLES = "examples"
_NUMBERED = re.compile(r"^(\d+)_(.+)\.py$")


@dataclass(frozen=True)
class Problem:
    id: int
    name: str  # the task's name: the file's stem
    path: Path
    file_hash: str  # sha256 of the file's bytes
    # "flashinfer": the file is a FlashInfer-Bench definition, read with the workloads of its trace set
    kind: str = "kernelbench"

    def task_request(self) -> tools.CreateTaskRequest:
        """The create_task request of this problem."""
        if self.kind == "flashinfer":
            return tools.CreateTaskRequest(flashinfer_definition=str(self.path), name=self.name)
        return tools.CreateTaskRequest(source=self.path.read_text(), name=self.name)


@dataclass(frozen=True)
class Suite:
    name: str  # what the user named: a directory, or "examples"
    path: Path
    problems: list[Problem]  # the picked ones, by id

    @property
    def kind(self) -> str:
        """ "flashinfer" for a FlashInfer-Bench trace set, else "kernelbench"."""
        return self.problems[0].kind if self.problems else "kernelbench"

    @property
    def hash(self) -> str:
        """Names the exact problem files: the same ids with the same contents give the same hash."""
        text = "\n".join(f"{p.id}:{p.file_hash}" for p in self.problems)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def examples_dir() -> Path:
    """The example tasks of this checkout (`examples/tasks` beside the package)."""
    return Path(__file__).resolve().parents[2] / "examples" / "tasks"


def parse_ids(text: str) -> set[int]:
    """'1-10,17' → {1, …, 10, 17}.

    Raises:
        RequestError: the text is not a list of numbers and ranges.
    """
    ids: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not match:
            raise RequestError(f"--ids {text!r}: {part!r} is not a problem number or a range; write it like 1-10,17")
        low, high = int(match.group(1)), int(match.group(2) or match.group(1))
        if high < low:
            raise RequestError(f"--ids {text!r}: the range {part} runs backwards; write {high}-{low}")
        ids.update(range(low, high + 1))
    return ids


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _problems(folder: Path, examples: bool) -> list[Problem]:
    if not examples and is_trace_set(folder):  # definitions carry no number: numbered by their names
        files = definition_files(folder)
        return [Problem(i, p.stem, p, _digest(p), kind="flashinfer") for i, p in enumerate(files, start=1)]
    files = sorted(p for p in folder.glob("*.py") if p.is_file() and not p.name.startswith("_"))
    if examples:  # our own tasks carry no number: they are numbered in the order of their names
        return [Problem(i, p.stem, p, _digest(p)) for i, p in enumerate(files, start=1)]
    problems = []
    for p in files:
        match = _NUMBERED.match(p.name)
        if match:
            problems.append(Problem(int(match.group(1)), p.stem, p, _digest(p)))
    seen: dict[int, Path] = {}
    for problem in problems:
        if problem.id in seen:
            raise RequestError(
                f"suite {folder} has two problems numbered {problem.id}: {seen[problem.id].name} and "
                f"{problem.path.name}; keep one"
            )
        seen[problem.id] = problem.path
    return sorted(problems, key=lambda p: p.id)


def read_suite(name: str, ids: str | None = None) -> Suite:
    """The suite `name` (a directory, or `examples`) with the problems `ids` picks (all by default).

    Raises:
        RequestError: the directory is missing or holds no problems, or `ids` picks none of them.
    """
    examples = name == EXAMPLES
    folder = examples_dir() if examples else Path(name)
    if not folder.is_dir():
        what = "is a file, not a directory" if folder.exists() else "does not exist"
        raise RequestError(
            f"suite {name} {what}; give a directory of KernelBench problems (a KernelBench checkout's "
            "KernelBench/level2, say), a FlashInfer-Bench trace set (a folder with definitions/), or `examples`"
        )
    problems = _problems(folder, examples)
    if not problems:
        raise RequestError(
            f"suite {name} holds no problems: a suite is a directory of KernelBench-format modules named by "
            "number, like 17_Conv2d_ReLU.py, or a FlashInfer-Bench trace set with definitions/*/*.json"
        )
    if ids is not None:
        wanted = parse_ids(ids)
        picked = [p for p in problems if p.id in wanted]
        if not picked:
            have = _ranges(sorted(p.id for p in problems))
            raise RequestError(f"--ids {ids} picks none of the problems of suite {name}, which are numbered {have}")
        problems = picked
    return Suite(name=name, path=folder.resolve(), problems=problems)


def _ranges(ids: list[int]) -> str:
    parts: list[str] = []
    start = prev = ids[0]
    for i in [*ids[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    return ",".join(parts)


def _solutions(folder: Path) -> dict[str, Path]:
    """The FlashInfer-Bench Solution files under `folder`, by the definition each names.

    Raises:
        RequestError: two of them name one definition.
    """
    by_definition: dict[str, Path] = {}
    for path in sorted(folder.rglob("*.json")):
        name = solution_definition(path)
        if name is None:
            continue
        if name in by_definition:
            raise RequestError(
                f"--replay {folder}: {by_definition[name].name} and {path.name} are both solutions of {name}; a "
                "replay folder holds one kernel per problem"
            )
        by_definition[name] = path
    return by_definition


def replay_files(folder: Path, suite: Suite) -> dict[int, Path]:
    """The kernel file for each problem of `suite` in `folder`: `17.py`, or the problem's own file name
    (`17_Conv2d_ReLU.py`, `row_softmax.py`); for a FlashInfer-Bench trace set, also a Solution (.json) anywhere
    under `folder` that names the problem's definition.

    Raises:
        RequestError: the folder is missing, or none of its files matches a problem.
    """
    if not folder.is_dir():
        raise RequestError(f"--replay {folder} is not a directory of kernels")
    found: dict[int, Path] = {}
    solutions = _solutions(folder) if suite.kind == "flashinfer" else {}
    for problem in suite.problems:
        for candidate in (folder / f"{problem.id}.py", folder / f"{problem.name}.py"):
            if candidate.is_file():
                found[problem.id] = candidate
                break
        else:
            if problem.name in solutions:
                found[problem.id] = solutions[problem.name]
    if not found:
        names = [f"{p.id}.py" for p in suite.problems]
        present = sorted(p.name for p in folder.glob("*.py"))
        raise RequestError(
            f"--replay {folder}: no file matches a problem of the suite. Name each kernel by its problem's id "
            f"({first_of(names, 3)}) or by the problem's file name "
            f"({suite.problems[0].name}.py); the folder holds " + (first_of(present, 5) if present else "no .py files")
        )
    return found
