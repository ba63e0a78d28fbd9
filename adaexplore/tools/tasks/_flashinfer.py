"""FlashInfer-Bench in the tools: a Definition with its workloads as a task, and a run's best kernel as a Solution."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import adaexplore
from adaexplore.config import Settings
from adaexplore.domain import Evaluation, SizeValue
from adaexplore.errors import RequestError
from adaexplore.executor import Task, load_task, read_task_file, task_from_source
from adaexplore.flashinfer import (
    definition_files,
    export_solution,
    import_definition,
    is_trace_set,
    solution_candidate,
    solution_definition,
    task_definition,
)
from adaexplore.tools._best import run_best
from adaexplore.tools._models import CreateTaskRequest

if TYPE_CHECKING:
    from adaexplore.tools._service import Services

__all__ = [
    "definition_files",
    "export_flashinfer_solution",
    "flashinfer_mode",
    "flashinfer_task",
    "is_trace_set",
    "kernel_file_code",
    "load_any_task",
    "run_mode",
    "solution_definition",
    "task_file_request",
]


def flashinfer_task(definition: str, workloads: list[str] | None, *, name: str | None = None) -> tuple[Task, str]:
    """The task of a FlashInfer-Bench Definition file with its workloads, and its origin for the record.

    Raises:
        RequestError: the package is missing, or a file is missing, does not validate or does not match.
        TaskError: the definition cannot be written as a task module.
    """
    imported = import_definition(definition, workloads)
    task = task_from_source(imported.source, name=name or imported.name)
    origin = f"flashinfer:{imported.name}:{imported.workloads} workloads:flashinfer-bench {imported.package}"
    return task, origin


def flashinfer_mode(source: str) -> str | None:
    """`flashinfer` for a task imported from FlashInfer-Bench (the mode its runs take unless one is asked for)."""
    return "flashinfer" if task_definition(source) is not None else None


def run_mode(settings: Settings, asked: str | None, task: Task) -> str:
    """The mode an evaluation or a run takes: the one asked for; else the settings' own where they name one; else
    the task's (flashinfer for a task imported from FlashInfer-Bench); else the default.

    Raises:
        RequestError: mode flashinfer for a task without a TOLERANCE of its own.
    """
    executor = settings.executor
    mode = asked or (executor.mode if "mode" in executor.model_fields_set else None)
    mode = mode or flashinfer_mode(task.source) or executor.mode
    if mode == "flashinfer" and task.tolerance is None:
        raise RequestError(
            f"mode flashinfer holds outputs to the task's own TOLERANCE, and task {task.name} declares none; tasks "
            "imported from FlashInfer-Bench definitions carry it (choose another mode for this one)"
        )
    return mode


def load_any_task(path: Path) -> Task:
    """A task file: a KernelBench-format module, or a FlashInfer-Bench Definition (.json) with the workloads of
    its trace set.

    Raises:
        TaskError: a module that is missing or unusable.
        RequestError: a definition that is missing, does not validate, or has no workloads.
    """
    if path.suffix == ".json":
        return flashinfer_task(str(path), None)[0]
    return load_task(path)


def kernel_file_code(path: Path, task_path: Path) -> str:
    """A kernel file's module: a candidate module as written, or a FlashInfer-Bench Solution (.json) for the
    definition `task_path` with a ModelNew around its entry point.

    Raises:
        TaskError: a module file that is missing or not text.
        RequestError: a Solution that is unusable (see `solution_candidate`), or one given for a task that is not
            a FlashInfer-Bench definition.
    """
    if path.suffix != ".json":
        return read_task_file(path, "kernel")
    if task_path.suffix != ".json":
        raise RequestError(
            f"{path} is a FlashInfer-Bench Solution, which runs only against its definition; give the definition's "
            ".json as the task"
        )
    return solution_candidate(path, task_path)


def task_file_request(path: Path, *, small_sizes: dict[str, SizeValue] | None = None) -> CreateTaskRequest:
    """The create_task request for a task file: a module's path, or a FlashInfer-Bench definition's (.json)."""
    if path.suffix == ".json":
        return CreateTaskRequest(flashinfer_definition=str(path), small_sizes=small_sizes)
    return CreateTaskRequest(path=str(path), small_sizes=small_sizes)


def export_flashinfer_solution(svc: Services, run_id: str, out: str | Path) -> tuple[Path, str]:
    """Write the run's best kernel as a FlashInfer-Bench Solution; returns the file and the solution's name.

    Raises:
        NotFoundError: no run has that id.
        RequestError: the run has no correct kernel, or its task is not a FlashInfer-Bench definition's.
    """
    run = svc.store.run(run_id)
    task = svc.store.task(run.task_id)
    meta = task_definition(task.source)
    if meta is None:
        raise RequestError(
            f"run {run_id}'s task {task.name} was not imported from a FlashInfer-Bench definition, so its kernel "
            "cannot be a Solution of one"
        )
    best = run_best(svc.store, run)
    if best is None:
        raise RequestError(f"run {run_id} has no correct kernel to export")
    node = svc.store.node(best.node_id, run_id=run.id)
    evaluation = (
        Evaluation.model_validate_json(svc.store.evaluation(node.evaluation_id).result)
        if node.evaluation_id is not None
        else None
    )
    speed = "not timed"
    where = ""
    if evaluation is not None:
        if evaluation.speedup is not None:
            speed = f"{evaluation.speedup:.3g}x eager PyTorch (geometric mean over its workloads)"
        provenance = evaluation.provenance
        where = f" on {provenance.gpu or 'no GPU'}, torch {provenance.torch}, triton {provenance.triton}"
    name = f"adaexplore_{meta['definition']}_{run_id.removeprefix('run-')}_n{node.id}"
    description = (
        f"Written in an adaexplore {adaexplore.__version__} search: run {run_id}, node {node.id} of task "
        f"{task.id}, mode {run.mode}, {speed}{where}; exported {datetime.now(UTC).strftime('%Y-%m-%d')}."
    )
    path = export_solution(code=node.code, task_source=task.source, name=name, description=description, out=out)
    return path, name
