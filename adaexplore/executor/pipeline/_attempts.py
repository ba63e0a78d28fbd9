"""One task's evaluation as attempts: the stages run once, and once more on a fresh worker when the first attempt
failed through no fault of the candidate (`infra_error`); the result says so (`provenance.attempts`), and a second
such failure is reported with both causes. The judge is started again only where it broke; one that holds memory
it should not is replaced once no other evaluation's job is in it; a retry after the device's memory ran out
holds the device alone (`stages/footprint.py`)."""

from __future__ import annotations

import time

from adaexplore.domain import Evaluation, Mode
from adaexplore.executor.host._environment import Environment
from adaexplore.executor.host._sandbox import SandboxPlan
from adaexplore.executor.pipeline._lanes import LaneBook
from adaexplore.executor.pipeline.stages import faults, result, sequence
from adaexplore.executor.pipeline.stages.context import Progress, Run, Verdict
from adaexplore.executor.tasks._task import Task
from adaexplore.roofline import GpuCalibration

__all__ = ["ATTEMPTS", "evaluate"]

# an evaluation that fails through no fault of the candidate is run this many times in all
ATTEMPTS = 2


async def evaluate(
    lanes: LaneBook,
    environment: Environment,
    sandbox: SandboxPlan | None,
    task: Task,
    code: str,
    *,
    mode: Mode,
    backend: str | None,
    with_compile: bool,
    fresh_reference: bool,
    fresh_seeds: bool,
    progress: Progress | None,
    budget: float | None,
    budget_wall: bool = True,
    calibrations: list[GpuCalibration] | None = None,
) -> tuple[Evaluation, float]:
    """`code`'s verdict on `task` (see `Evaluator.evaluate`), and the time the candidate spent of its budget."""
    first: Verdict | None = None
    started = time.perf_counter()
    for attempt in range(1, ATTEMPTS + 1):
        run = Run(task, code, mode, progress)
        run.started = started  # a retry's phases and progress count from the evaluation's start
        run.candidate_budget_s = budget
        # the device's memory ran out the first time: the retry waits for the device to itself
        run.alone = first is not None and first.memory
        run.candidate_budget_wall = budget_wall
        run.calibrations = calibrations or []
        if fresh_seeds and not run.spec.fresh_seeds:
            run.spec = run.spec.model_copy(update={"fresh_seeds": True})
        status, message, error = await sequence.run(
            lanes, run, backend, environment, with_compile=with_compile, fresh_reference=fresh_reference
        )
        if run.fault is None or attempt == ATTEMPTS:
            break
        first = run.fault
        await run.report("retrying", f"retrying on a fresh worker after a failure of adaexplore's own: {message}")
        if first.judge is not None and run.judge is not None:
            if first.retire:  # it holds memory it should not: replaced once no other evaluation's job is in it
                await run.judge.retire(first.judge)  # type: ignore[arg-type]
            else:  # it broke: the other evaluations' jobs in it fail at their next request, and are retried
                await run.judge.restart(first.judge)  # type: ignore[arg-type]
    if first is not None and run.fault is not None:
        message = faults.infra_twice(first, run.fault)
    elif first is not None:
        message += faults.retried_note(first)
    await run.report("done", status.value)
    evaluation = result.build(
        run,
        status,
        message,
        error,
        config=lanes.config,
        environment=environment,
        sandbox=sandbox,
        attempts=attempt,
    )
    return evaluation, run.candidate_spent_s
