"""Where the offline generator (`replay`) finds a run's kernels: a folder of one's own (`explore TASK --kernels
DIR`: `DIR/<task>/*.py`, else `DIR/*.py`), else the sample kernels beside an example task
(`examples/kernels/<task>/`). The folder is recorded with the run, so that `explore --resume RUN` serves the same
kernels wherever it is typed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from adaexplore import tools
from adaexplore.agent._writers import ReplayWriter, kernels_folder, kernels_in, replay_kernels
from adaexplore.errors import RequestError

__all__ = ["Served", "banner", "check_option", "examples_path", "for_resume", "for_task", "serve"]


@dataclass(frozen=True)
class Served:
    folder: Path
    kernels: dict[str, str]


def check_option(kernels: Path, model: str) -> None:
    """`--kernels DIR`, checked before anything starts.

    Raises:
        RequestError: a model was asked for too, or DIR is no folder.
    """
    if model != "replay":
        raise RequestError(
            f"--kernels serves your own kernels in place of a model, and this command would ask {model}: drop --model "
            "(or --kernels)"
        )
    if not kernels.is_dir():
        raise RequestError(f"--kernels {kernels}: no such folder; give the folder that holds your kernels")


def banner(folders: list[Path]) -> str:
    """What the command says of the generator: which folders it serves."""
    samples = Path("examples/kernels").resolve()
    where = (
        "the sample kernels beside each example task (examples/kernels/<task>/)"
        if all(f.parent == samples for f in folders)
        else "the kernels of " + ", ".join(sorted({str(f) for f in folders}))
    )
    return (
        f"model: replay: the offline generator, NOT a language model. It serves {where}. Set OPENAI_API_KEY or "
        "--base-url to use a model."
    )


def _layout(name: str) -> str:
    return (
        f"put its kernels (modules defining ModelNew, one per file) in a folder and give it with --kernels DIR "
        f"(DIR/{name}/*.py, or DIR/*.py for one task); or use a model: --model NAME with OPENAI_API_KEY or "
        "--base-url"
    )


def _own(folder: Path, name: str) -> Served:
    chosen = kernels_folder(folder, name).resolve()
    kernels = kernels_in(chosen)
    if not kernels:
        raise RequestError(f"--kernels {folder}: no kernel for task {name} in {chosen} (no .py file); {_layout(name)}")
    return Served(chosen, kernels)


def for_task(task_path: Path, kernels: Path | None) -> Served:
    """The kernels replay serves for a new run on the task of `task_path`.

    Raises:
        RequestError: there are none.
    """
    name = task_path.stem
    if kernels is not None:
        return _own(kernels, name)
    found, looked = replay_kernels(task_path), looked_in(task_path)
    if not found:
        raise RequestError(
            f"replay has no kernels for task {name}: it serves the sample kernels beside the example tasks "
            f"(it looked in {looked}) or a folder of your own; {_layout(name)}"
        )
    return Served(looked, found)


def looked_in(task_path: Path) -> Path:
    """The folder of sample kernels beside a task (examples/tasks/X.py: examples/kernels/X)."""
    path = task_path.resolve()
    return path.parent.parent / "kernels" / path.stem


def examples_path(name: str) -> Path:
    return Path("examples/tasks") / f"{name}.py"


def for_resume(run: tools.RunResult, stored: str | None, task_path: Path | None, kernels: Path | None) -> Served:
    """The kernels replay serves for a resumed run: from the folder given now, the task file given now, the
    folder recorded with the run, or else the examples' own.

    Raises:
        RequestError: there are none.
    """
    name = run.task_name
    if kernels is not None:
        return _own(kernels, name)
    if task_path is not None:
        return for_task(task_path, None)
    if stored is not None:
        folder = Path(stored)
        found = kernels_in(folder) if folder.is_dir() else {}
        if not found:
            raise RequestError(
                f"run {run.run_id} was searched with the kernels of {folder}, which holds none now; give their "
                f"folder with --kernels DIR: adaexplore explore --resume {run.run_id} --kernels DIR"
            )
        return Served(folder, found)
    path = examples_path(name)
    if not replay_kernels(path):
        raise RequestError(
            f"run {run.run_id} is on task {name}, which is not an example task here, and it recorded no folder of "
            f"kernels; give the folder its kernels come from: adaexplore explore --resume {run.run_id} --kernels DIR"
        )
    return for_task(path, None)


def serve(writer: ReplayWriter, svc: tools.Services, task_id: str, run_id: str, served: Served) -> None:
    """Let `writer` serve `served` for the task, and record its folder with the run."""
    writer.kernels[task_id] = served.kernels
    writer.folders[task_id] = served.folder
    tools.set_run_kernels(svc, run_id, str(served.folder))
