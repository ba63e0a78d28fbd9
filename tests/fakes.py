"""A stand-in for the evaluator where the search, not the kernel, is under test: verdicts come from a script."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from adaexplore.config import Settings
from adaexplore.executor import (
    Backend,
    Evaluation,
    EvaluationOptions,
    Mode,
    Provenance,
    Stats,
    Status,
    Task,
    TaskCheck,
    Timing,
    code_hash,
)
from adaexplore.store import Store
from adaexplore.tools import Services

Verdict = tuple[Status, float | None]


def _stats(ms: float) -> Stats:
    return Stats(n=10, median_ms=ms, mean_ms=ms, std_ms=0.0, min_ms=ms, max_ms=ms, p10_ms=ms, p90_ms=ms)


def make_evaluation(
    task: Task,
    code: str,
    status: Status,
    speedup: float | None,
    mode: str = "strict",
    backends: tuple[Backend, ...] = (Backend.cuda,),
) -> Evaluation:
    timing = None
    if status is Status.ok and speedup is not None:
        timing = Timing(
            method="scripted",
            statistic="median",
            candidate=_stats(1.0 / speedup),
            reference=_stats(1.0),
            speedup=speedup,
        )
    provenance = Provenance(
        adaexplore="test",
        python="3",
        environment="fake-env",
        task_hash=task.hash,
        code_hash=code_hash(code),
        sizes="full",
        finished_at="2026-01-01T00:00:00+00:00",
    )
    return Evaluation(
        status=status,
        message=f"scripted {status.value}",
        mode=Mode(mode),
        backends=list(backends),
        timed=timing is not None,
        timing=timing,
        provenance=provenance,
    )


class FakeEvaluator:
    """Answers `evaluate` with `script(code, call_number)`; counts its calls."""

    def __init__(self, script: Callable[[str, int], Verdict]) -> None:
        self.script = script
        self.calls = 0
        self.fresh_seeds: list[bool] = []  # what each call asked for
        self.budgets: list[float | None] = []  # the candidate budget each call gave
        self.budget_walls: list[bool] = []  # and whether it bounds wall time too
        self.checked: list[str] = []  # the tasks check_task was asked about
        self.checked_modes: list[str | None] = []  # and the mode each check was asked for (None: the settings')

    async def evaluate(
        self, task: Task, code: str, options: EvaluationOptions | None = None, *, progress: object = None
    ) -> Evaluation:
        options = options or EvaluationOptions()
        self.calls += 1
        self.budgets.append(options.candidate_budget_s)
        self.budget_walls.append(options.candidate_budget_wall)
        self.fresh_seeds.append(options.fresh_seeds)
        status, speedup = self.script(code, self.calls)
        # the path a GPU machine takes, or the backend asked for
        backend = options.backend
        backends = (Backend.cuda,) if backend in (None, "auto") else (Backend(backend),)
        return make_evaluation(task, code, status, speedup, options.mode or "strict", backends)

    async def check_task(self, task: Task, options: EvaluationOptions | None = None) -> TaskCheck:
        self.checked.append(task.name)  # records nothing of the reference: its tasks get no speed of light
        self.checked_modes.append(options.mode.value if options is not None and options.mode is not None else None)
        return TaskCheck()

    async def ready(self, progress: object = None) -> None:
        return None

    def fingerprint(self) -> str:
        return "fake-env"


def by_hash(code: str, _: int) -> Verdict:
    """A deterministic verdict from the code alone: a mix of failures and speedups."""
    h = int(code_hash(code), 16)
    kind = h % 10
    if kind < 2:
        return Status.compile_error, None
    if kind < 4:
        return Status.mismatch, None
    return Status.ok, 0.5 + (h >> 8) % 400 / 100


def services_over(store: Store) -> Services:
    """Services over an open store for the functions that only read it (a report page, a run's text); their home
    is the SQLite file's folder, or the temporary folder for a PostgreSQL store (reading writes nothing there)."""
    where = Path(store.where)
    home = where.parent if where.is_file() else Path(tempfile.gettempdir())
    return Services(settings=Settings(home=home), store=store, evaluator=FakeEvaluator(by_hash))
