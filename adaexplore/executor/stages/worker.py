"""The stages' conversation with workers: taking a candidate worker from its pool, waiting for its events,
and asking the judge."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from adaexplore.domain import Backend, Status
from adaexplore.errors import EvaluatorError, TaskError
from adaexplore.executor._channel import WorkerChannel
from adaexplore.executor._pool import JudgeClient
from adaexplore.executor._process import WorkerDied, WorkerTimeout
from adaexplore.executor._protocol import Event, Failed, Phase, Ready, TaskFailed
from adaexplore.executor.stages import faults
from adaexplore.executor.stages.context import Run, Verdict

if TYPE_CHECKING:
    from adaexplore.executor._evaluator import Evaluator

__all__ = ["ask_judge", "await_event", "candidate"]

HEARTBEAT_S = 2.0


@contextlib.asynccontextmanager
async def candidate(
    ev: Evaluator, ctx: Run, backend: Backend, device: int
) -> AsyncIterator[tuple[WorkerChannel, Ready]]:
    """A ready worker of `backend`'s pool for this candidate alone; closed afterwards, its output kept."""
    pool = ev._pool(backend, device)
    async with ev._slots[(backend, device)]:
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
    ev: Evaluator, ctx: Run, worker: WorkerChannel, *, timeout: float, until: tuple[type, ...], what: str
) -> Event:
    """Events from the worker until one of `until` (or a failure); reports progress meanwhile.

    Raises:
        Verdict: the candidate failed, hung or its worker died (whose fault it was is in the status).
        TaskError: the task's own code failed in the worker.
    """
    entered = time.monotonic()
    try:
        return await _await_event(ev, ctx, worker, timeout=timeout, until=until, what=what, entered=entered)
    finally:
        ctx.candidate_spent_s += time.monotonic() - entered


async def _await_event(
    ev: Evaluator,
    ctx: Run,
    worker: WorkerChannel,
    *,
    timeout: float,
    until: tuple[type, ...],
    what: str,
    entered: float,
) -> Event:
    config = ev.config
    budget = ctx.candidate_budget_s
    # the candidate's whole budget, of which earlier phases spent some
    budget_end = entered + budget - ctx.candidate_spent_s if budget is not None else float("inf")
    deadline = time.monotonic() + timeout
    while True:
        remaining = min(deadline, budget_end) - time.monotonic()
        try:
            event = await worker.receive(min(HEARTBEAT_S, max(remaining, 0.0)))
        except WorkerTimeout:
            now = time.monotonic()
            if now >= budget_end and budget_end < deadline:
                raise Verdict(
                    Status.timeout,
                    f"{what} was still running when the kernel's budget of {budget:.0f} s (over all its phases: "
                    f"loading, trials and timing) ran out, and was killed; look for a loop that never ends or a "
                    "wait on another program",
                ) from None
            if now >= deadline:
                raise Verdict(
                    Status.timeout,
                    f"{what} did not finish within {timeout:.0f} s and was killed; "
                    "look for a loop that never ends or a wait on another program",
                ) from None
            await ctx.report("working", f"{what} ({time.perf_counter() - ctx.started:.0f} s)")
            continue
        except WorkerDied as exc:
            raise faults.died(ctx, worker, exc, what, config) from None
        if isinstance(event, Phase):
            if event.phase == "trial":
                deadline = time.monotonic() + config.trial_timeout_s
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
            phase = what if event.status is Status.infra_error else None
            raise Verdict(event.status, ctx.scrub(event.message), event.error, phase=phase)
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
        Verdict: `infra_error`: the judge died, did not answer, failed or answered something else.
        TaskError: the task's own code failed in the judge.
    """
    what = f"the judge's {getattr(command, 'kind', 'request')!s} request"
    try:
        event = await judge.request(command, timeout)
    except EvaluatorError as exc:
        # the judge's client dropped the lost process; the next request starts another
        raise Verdict(Status.infra_error, str(exc), phase=what) from exc
    if isinstance(event, TaskFailed):
        raise TaskError(f"task {ctx.task.name!r}: {event.message}")
    if isinstance(event, Failed):
        phase = what if event.status is Status.infra_error else None
        raise Verdict(event.status, ctx.scrub(event.message), event.error, phase=phase, judge=judge.worker)
    if not isinstance(event, expect):
        raise Verdict(
            Status.infra_error,
            f"unexpected {event.kind} message from the judge during {what}",
            phase=what,
            judge=judge.worker,
        )
    return event
