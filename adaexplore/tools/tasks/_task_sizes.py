"""The small sizes a new task gets: the caller's, the module's own, or derived and checked in a sandboxed worker."""

from __future__ import annotations

from adaexplore.config import Settings
from adaexplore.domain import SizeValue
from adaexplore.executor import Task, derive_small_sizes, task_from_source, with_small_sizes

__all__ = ["checks_on_cpu", "given_sizes", "sized_task"]


def given_sizes(task: Task, given: dict[str, SizeValue] | None) -> tuple[Task, str]:
    """`task` with the caller's small sizes (`{}`: none, so CPU checks run at full sizes) in place of the
    module's SMALL_SIZES, or as it is when none are given; and a sentence saying where its sizes came from.

    Raises:
        TaskError: the given sizes are not names to numbers.
    """
    if given is None:
        note = "SMALL_SIZES from the task module" if task.small_sizes is not None else "no SMALL_SIZES"
        return task, note
    how = "given with the request" if given else "none given with the request: CPU checks run at full sizes"
    sized = task_from_source(with_small_sizes(task.source, given, how), name=task.name)
    listed = ", ".join(f"{name}={value}" for name, value in given.items())
    return sized, f"SMALL_SIZES given with the request: {listed}" if given else f"SMALL_SIZES {how}"


def checks_on_cpu(evaluator: object, settings: Settings, backend: str | None) -> bool:
    """Whether a candidate is judged on the CPU backends (compile, interpret), where small sizes matter: the
    backend asked for, else the settings', else (auto) the started evaluator's machine; an evaluator that does not
    say (the cluster's) counts as one without a GPU."""
    choice = backend if backend not in (None, "auto") else settings.executor.backend
    if choice != "auto":
        return choice != "cuda"
    environment = getattr(evaluator, "environment", None)
    return environment is None or not environment.has_gpu


async def sized_task(task: Task, given: dict[str, SizeValue] | None, settings: Settings) -> tuple[Task, str]:
    """As `given_sizes`; but a module with no SMALL_SIZES, given none, gets sizes derived from its
    module-level integers, each candidate run in a worker of the evaluator's kind (never this process), in the
    sandbox and with the limits `settings` give candidates, until the reference runs.

    Raises:
        TaskError: the given sizes are not names to numbers.
        ConfigError: no sandbox is available and the settings do not accept running without one.
        EvaluatorError: the worker could not be started.
    """
    if given is not None or task.small_sizes is not None:
        return given_sizes(task, given)
    derivation = await derive_small_sizes(task.source, settings=settings)
    if not derivation.sizes:
        return task, derivation.note()
    chosen = derivation.chosen
    how = f"derived by adaexplore: {chosen.how if chosen else 'scaled down'}"
    sizes: dict[str, SizeValue] = dict(derivation.sizes)  # invariant dicts: mypy wants the wider type named
    return task_from_source(with_small_sizes(task.source, sizes, how), name=task.name), derivation.note()
