"""Checking a task before any candidate: its module, Model and reference outputs, in the judge."""

from __future__ import annotations

import contextlib
import time

import anyio

from adaexplore.domain import Backend, Mode
from adaexplore.errors import EvaluatorError, TaskError
from adaexplore.executor.host._pool import JudgeLost
from adaexplore.executor.pipeline.stages.context import Run
from adaexplore.executor.pipeline.stages.faults import signal_name
from adaexplore.executor.pipeline.stages.footprint import need
from adaexplore.executor.pipeline.stages.lane import Lane, Lanes
from adaexplore.executor.tasks._task import Task
from adaexplore.executor.wire._protocol import JobSpec, Load, Loaded, Prepare, Prepared, TaskFailed
from adaexplore.roofline import TaskWork

__all__ = ["run"]


async def run(lanes: Lanes, task: Task, mode: Mode) -> tuple[TaskWork | None, Prepared | None]:
    """What the task's reference does at full size, as the judge recorded it on loading it (None: it could not),
    and what the judge found preparing its reference (its facts: is the task degenerate). The reference is built as
    an evaluation in `mode` builds it; on fresh seeds, the judge keeps it, and the task's first evaluation in that
    mode takes those seeds (`stages/ahead.py`).

    Raises:
        TaskError: the task's own code failed, with the reason.
        EvaluatorError: the judge could not be asked.
    """
    # the judge this machine's evaluations use: the GPU's, or the CPU's
    numeric = Backend.cuda if Backend.cuda in lanes.backends() else Backend.interpret
    ctx = Run(task, "", mode, None)
    task_path = lanes.task_file(task)
    with lanes.lane_for(numeric, turn=False) as lane:
        return await _check_on(lane, task, ctx, lane.make_job(ctx, task_path.parent, task_path))


async def _check_on(lane: Lane, task: Task, ctx: Run, job: JobSpec) -> tuple[TaskWork | None, Prepared | None]:
    judge, lock = lane.judge, lane.lock
    assert judge is not None

    async def ask(command: object, timeout: float, what: str) -> object:
        # Only the task's own code runs in the judge here: its hang or its death is the task's fault.
        try:
            event = await judge.request(command, timeout)
        except JudgeLost as lost:
            if lost.timed_out:
                raise TaskError(
                    f"task {task.name!r}: {what} took longer than {timeout:g} s; a task's code must finish "
                    "promptly (no sleeping, downloading or waiting for input)"
                ) from None
            code = lost.returncode
            how = f"was killed by {signal_name(code)}" if code is not None and code < 0 else f"exited (code {code})"
            output = lost.output.strip()
            raise TaskError(
                f"task {task.name!r}: the process running {what} {how}"
                + (f": {output}" if output else " and wrote nothing; a task's code must not exit or crash")
            ) from None
        except EvaluatorError as exc:
            raise EvaluatorError(f"could not check task {task.name!r}: {exc}") from None
        if isinstance(event, TaskFailed):
            raise TaskError(f"task {task.name!r}: {event.message}")
        return event

    # the check is the task's first evaluation's load: the judge keeps its reference, inputs and all (on fresh
    # seeds, for that evaluation to take them)
    fresh = job.init_seed is not None
    job = job.model_copy(update={"keep_reference": True})
    started = time.perf_counter()
    async with contextlib.AsyncExitStack() as held:
        if lane.memory is not None:  # the judge's part of an evaluation's memory: the reference it builds
            try:
                size = await need(judge, lane.memory, lane.config, job, worker=False)
            except EvaluatorError as exc:
                raise EvaluatorError(f"could not check task {task.name!r}: {exc}") from None
            await held.enter_async_context(lane.memory.reserve(size))
        try:
            loaded = await ask(
                Load(job=job),
                lane.config.load_timeout_s,
                "importing its module, building Model(*get_init_inputs()) and drawing get_inputs()",
            )
            if lock is not None:  # the forward runs on the device; no candidate is timed beside it
                await lock.acquire()
            try:
                prepared = await ask(
                    Prepare(job_id=job.job_id), lane.config.trial_timeout_s * (job.trials + 3), "Model's forward"
                )
            finally:
                if lock is not None:
                    lock.release()
            if fresh:
                lane.ahead.keep(lane.where, job, time.perf_counter() - started)
            return (
                loaded.work if isinstance(loaded, Loaded) else None,
                prepared if isinstance(prepared, Prepared) else None,
            )
        finally:  # within the reservation: the judge's answer says what it keeps of the reference
            with anyio.CancelScope(shield=True), contextlib.suppress(EvaluatorError):
                await judge.release(job.job_id)
