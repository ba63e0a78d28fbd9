"""Task and kernel files, and one kernel evaluated on its own: `adaexplore profile`, and the checks the command
line and the headless loop make on the files they are given before anything starts."""

from __future__ import annotations

import time
from pathlib import Path

from adaexplore.cluster import open_evaluator
from adaexplore.config import Settings
from adaexplore.domain import Evaluation
from adaexplore.executor import (
    EvaluationOptions,
    Mode,
    ProgressUpdate,
    Task,
    gpu_device_present,
    read_task_file,
    render_evaluation,
)
from adaexplore.tools._calibrate import stored_calibrations
from adaexplore.tools._service import Progress
from adaexplore.tools.tasks._flashinfer import kernel_file_code, load_any_task, run_mode
from adaexplore.tools.tasks._task_sizes import checks_on_cpu, sized_task

__all__ = [
    "ProgressUpdate",
    "Task",
    "check_task_file",
    "profile_kernel",
    "read_code_file",
    "render_evaluation",
    "single_use",
    "task_hash",
]


def single_use(settings: Settings) -> Settings:
    """Settings for an evaluator that serves one command's few evaluations (`profile`, `memory confirm`) on a
    machine without a GPU: unless the settings say otherwise, it keeps no spare workers, so each evaluation starts
    the workers it needs and none is started after the last one only to be stopped (on 2 cores a `profile` takes
    8 s of CPU instead of 13, and finishes sooner). On a GPU a spare's start overlaps the judge's, and stays."""
    if settings.executor.warm_workers is not None or gpu_device_present():
        return settings
    return settings.model_copy(update={"executor": settings.executor.model_copy(update={"warm_workers": 0})})


def check_task_file(path: Path) -> None:
    """Load a task file as the evaluator will, so that one that is missing or unusable is named before any work.

    Raises:
        TaskError: the file is missing, unreadable, or not a usable task module.
    """
    load_any_task(path)


def task_hash(path: Path) -> str:
    """The id a task file gets when it is registered (the same task always gets the same id).

    Raises:
        TaskError: as `check_task_file`.
    """
    return load_any_task(path).hash


def read_code_file(path: Path, what: str) -> str:
    """The text of a kernel (or reproducer) file; `what` names it in the error.

    Raises:
        TaskError: the file is missing, unreadable, or too large.
    """
    return read_task_file(path, what)


async def profile_kernel(
    settings: Settings,
    task_path: Path,
    kernel_path: Path,
    *,
    mode: str | None = None,
    backend: str | None = None,
    with_compile: bool = False,
    fresh_reference: bool = False,
    full_size: bool = False,
    progress: Progress | None = None,
) -> tuple[Evaluation, str | None]:
    """Evaluate a kernel file against a task file outside any run: nothing is stored, and no database is made.
    On the CPU backends the task gets small sizes as a search's task does (its SMALL_SIZES, else sizes derived in
    a sandboxed worker); `full_size` keeps its own. Returns the verdict and a sentence on the sizes the CPU
    checks ran at (None where the kernel ran on a GPU, always at full size). There, at small sizes, the candidate
    gets the budget of an MCP call (`executor.call_budget_s`): a kernel that does not return is a `timeout` in it.

    Raises:
        TaskError: a file is missing or not usable.
        EvaluatorError: the evaluator could not start.
    """
    task = load_any_task(task_path)
    code = kernel_file_code(kernel_path, task_path)
    chosen = run_mode(settings, mode, task)
    began = time.monotonic()
    async with open_evaluator(single_use(settings)) as evaluator:  # here, or on the cluster the settings name
        note, budget = None, None
        if checks_on_cpu(evaluator, settings, backend):
            # a person waits, as an MCP client does: at small sizes, the call's budget (see tools/steps/_budget.py)
            budget = None if full_size else settings.executor.call_budget_s
            if progress is not None and task.small_sizes is None and not full_size:
                message = "deriving small sizes for the CPU checks (--full-size checks at the task's full sizes)"
                await progress(ProgressUpdate(stage="sizes", message=message, elapsed_s=time.monotonic() - began))
            task, note = await sized_task(task, {} if full_size else None, settings)
            # in the command line's words, not the MCP tools' (small_sizes, "given with the request")
            note = (
                "--full-size: CPU checks run at the task's full sizes"
                if full_size
                else note.removesuffix("; give small_sizes to choose others")
                + "; --full-size checks at the task's full sizes"
            )
            if progress is not None:
                await progress(ProgressUpdate(stage="sizes", message=note, elapsed_s=time.monotonic() - began))
        options = EvaluationOptions(
            mode=Mode(chosen),
            backend=backend,
            with_compile=with_compile,
            fresh_reference=fresh_reference,
            candidate_budget_s=budget,
            calibrations=stored_calibrations(settings),
        )
        evaluation = await evaluator.evaluate(task, code, options, progress=progress)
    return evaluation.model_copy(update={"forward_work": None}), note
