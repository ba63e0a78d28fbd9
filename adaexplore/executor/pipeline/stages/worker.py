"""The stages' conversation with workers: taking a candidate worker from its pool, waiting for its events,
and asking the judge."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator

from adaexplore.config import ExecutorConfig
from adaexplore.domain import Backend, Status
from adaexplore.errors import EvaluatorError, TaskError
from adaexplore.executor.host._pool import JudgeClient
from adaexplore.executor.host._process import WorkerDied, WorkerTimeout
from adaexplore.executor.host._spawn import WorkerChannel
from adaexplore.executor.pipeline.stages import faults
from adaexplore.executor.pipeline.stages.budget import Clock, phase_timeout, ran_out, where_it_was
from adaexplore.executor.pipeline.stages.context import Run, Verdict
from adaexplore.executor.pipeline.stages.lane import Lane
from adaexplore.executor.wire._protocol import COMPILED, COMPILING, Event, Failed, Phase, Ready, TaskFailed

__all__ = ["ask_judge", "await_event", "candidate"]

HEARTBEAT_S = 2.0


@contextlib.asynccontextmanager
async def candidate(lane: Lane, ctx: Run) -> AsyncIterator[tuple[WorkerChannel, Ready]]:
    """A ready worker of the lane's pool for this candidate alone; closed afterwards, its output kept."""
    pool, backend = lane.pool, lane.backend
    async with lane.slot:
        await ctx.report("handover", f"starting the {backend.value} worker")
        try:
            with ctx.phase("handover"):
                worker, ready = await pool.acquire()
        except BaseException:
            pool.fill()
            raise
        ctx.versions = dict(ready.versions)
        await ctx.report("handover", f"candidate handed to {backend.value} worker pid {worker.pid}")
        try:
            yield worker, ready
        finally:
            await worker.aclose()
            # The replacement starts now, not while this candidate was being measured.
            pool.fill()
            text = ctx.scrub(worker.output.text()).strip()
            if text:
                ctx.output.append(text if len(ctx.planned) == 1 else f"[{backend.value}]\n{text}")


async def await_event(
    config: ExecutorConfig,
    ctx: Run,
    worker: WorkerChannel,
    *,
    timeout: float,
    until: tuple[type, ...],
    what: str,
    charge: bool = True,
) -> Event:
    """Events from the worker until one of `until` (or a failure); reports progress meanwhile. `charge`: what the
    wait takes counts against the candidate's budget (see `budget.Clock`).

    Raises:
        Verdict: the candidate failed, hung or its worker died (whose fault it was is in the status).
        TaskError: the task's own code failed in the worker.
    """
    clock = Clock(ctx, worker, charge)
    try:
        return await _await_event(config, ctx, worker, timeout=timeout, until=until, what=what, clock=clock)
    finally:
        clock.settle()


async def _await_event(
    config: ExecutorConfig,
    ctx: Run,
    worker: WorkerChannel,
    *,
    timeout: float,
    until: tuple[type, ...],
    what: str,
    clock: Clock,
) -> Event:
    deadline = time.monotonic() + timeout
    while True:
        if clock.out() and time.monotonic() < deadline:
            raise ran_out(ctx, clock, what, await where_it_was(ctx, worker, clock))
        remaining = deadline - time.monotonic()
        left = clock.left()
        if left is not None:
            remaining = min(remaining, left)
        try:
            event = await worker.receive(min(HEARTBEAT_S, max(remaining, 0.0)))
        except WorkerTimeout:
            if time.monotonic() >= deadline:
                if ctx.check:  # the evaluator's own check ran out of its time: no sign that the kernel hangs
                    raise phase_timeout(clock, what, timeout, "", check=ctx.check) from None
                raise phase_timeout(clock, what, timeout, await where_it_was(ctx, worker, clock)) from None
            if not clock.out():
                await ctx.report("working", f"{what} ({time.perf_counter() - ctx.started:.0f} s)")
            continue
        except WorkerDied as exc:
            raise faults.died(ctx, worker, exc, what, config) from None
        if isinstance(event, Phase):
            if event.phase == COMPILING:
                clock.compile_started(event.detail)
                continue
            if event.phase == COMPILED:
                clock.compile_ended()
                continue
            if event.phase == "compiling":
                what = (
                    "the compile check (forward run once, each kernel launch compiled for sm_90 and not run)"
                    if worker.backend == Backend.compile.value
                    else "the compile pass (forward run once, each kernel compiled before it runs)"
                )
            elif event.phase == "trial":
                deadline = time.monotonic() + (ctx.trial_timeout_s or config.trial_timeout_s)
                what = f"trial {(event.done or 0) + 1} of {event.total}"
            elif event.phase == "timing":
                deadline = time.monotonic() + config.timing_timeout_s
                what = "timing"
            await ctx.report(event.phase, event.detail or what, event.done, event.total)
            continue
        if isinstance(event, Failed):
            ctx.add_flags(event.flags)
            ctx.audit.shared_memory.update(event.shared_memory)
            ctx.audit.static_cost.extend(event.static_cost)
            if event.status is Status.runtime_error:
                ours = await faults.judge_over_budget(ctx, event, what)
                if ours is not None:
                    raise ours
            infra = event.status is Status.infra_error
            memory = infra and faults.is_out_of_memory(event)
            message = ctx.scrub(event.message)
            if memory and ctx.held_alone:
                message += (
                    "; this evaluation held the GPU alone, so the task at its full sizes (its inputs, outputs and "
                    "reference, besides the candidate's own memory) may be too large for this GPU: make it smaller"
                )
            raise Verdict(event.status, message, event.error, phase=what if infra else None, memory=memory)
        if isinstance(event, TaskFailed):
            raise TaskError(f"task {ctx.task.name!r}: {event.message}")
        if isinstance(event, until):
            if worker.over_quota():
                raise faults.died(ctx, worker, WorkerDied(worker.returncode), what, config)
            return event
        raise Verdict(Status.infra_error, f"unexpected {event.kind} message from the worker during {what}", phase=what)


async def ask_judge(judge: JudgeClient, command: object, timeout: float, ctx: Run, expect: type) -> Event:
    """The judge's answer to `command`, which must be an `expect`.

    Raises:
        Verdict: `infra_error`: the judge died, did not answer, failed or answered something else; or the job is
            not in the judge's process now (loaded in one replaced since).
        TaskError: the task's own code failed in the judge.
    """
    what = f"the judge's {getattr(command, 'kind', 'request')!s} request"
    try:
        event = await judge.request(command, timeout)
    except EvaluatorError as exc:
        # the judge's client dropped a lost process (the next request starts another), or the job was loaded in a
        # process replaced since (the retry loads it again)
        raise Verdict(Status.infra_error, str(exc), phase=what) from exc
    if isinstance(event, TaskFailed):
        raise TaskError(f"task {ctx.task.name!r}: {event.message}")
    if isinstance(event, Failed):
        # The judge answered: it works, and keeps the other evaluations' jobs. Where the device's memory ran out
        # (other work fills it), the retry holds the device alone.
        phase = what if event.status is Status.infra_error else None
        memory = faults.is_out_of_memory(event)
        raise Verdict(event.status, ctx.scrub(event.message), event.error, phase=phase, memory=memory)
    if not isinstance(event, expect):
        raise Verdict(
            Status.infra_error,
            f"unexpected {event.kind} message from the judge during {what}",
            phase=what,
            judge=judge.worker,
        )
    return event
