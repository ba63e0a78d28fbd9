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
from adaexplore.executor.pipeline.stages.context import Run, Verdict
from adaexplore.executor.pipeline.stages.lane import Lane
from adaexplore.executor.wire._protocol import Event, Failed, Phase, Ready, TaskFailed

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


class _Clock:
    """What one wait on a worker spends of the candidate's budget: on the CPU backends the CPU time the worker's
    processes use (read from the system, so a busy machine costs the kernel nothing), on a GPU wall time."""

    def __init__(self, ctx: Run, worker: WorkerChannel, charge: bool) -> None:
        self.ctx, self.worker, self.charge = ctx, worker, charge
        self.wall0 = time.monotonic()
        self.cpu0 = worker.cpu_seconds() if worker.backend != Backend.cuda.value else None
        self.cpu = self.cpu0 is not None

    def wall(self) -> float:
        return time.monotonic() - self.wall0

    def used(self) -> float:
        """What this wait has spent so far, in the budget's unit."""
        if self.cpu0 is not None:
            now = self.worker.cpu_seconds()
            if now is not None:
                return max(0.0, now - self.cpu0)
        return self.wall()

    def spent(self) -> float:
        """The candidate's budget spent so far, this wait included."""
        return self.ctx.candidate_spent_s + (self.used() if self.charge else 0.0)


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
    wait takes counts against the candidate's budget (the compile check for sm_90 has its phase's timeout alone).

    Raises:
        Verdict: the candidate failed, hung or its worker died (whose fault it was is in the status).
        TaskError: the task's own code failed in the worker.
    """
    clock = _Clock(ctx, worker, charge)
    try:
        return await _await_event(config, ctx, worker, timeout=timeout, until=until, what=what, clock=clock)
    finally:
        if charge:
            ctx.candidate_spent_s += clock.used()


def _ran_out(ctx: Run, clock: _Clock, what: str) -> Verdict:
    budget = ctx.candidate_budget_s or 0.0
    if clock.cpu:
        where = (
            "Triton's interpreter and the sm_90 compile of each launch"
            if clock.worker.backend == "interpret"
            else ("the worker")
        )
        return Verdict(
            Status.timeout,
            f"{what} was still running when the kernel's budget of {budget:.0f} s of CPU time (for loading it and "
            f"running its trials, executor.call_budget_s) ran out, after {clock.spent():.1f} s of CPU time in "
            f"{where} ({clock.wall():.1f} s of wall time in this phase), and was killed. The interpreter runs every "
            "program of a launch in turn on the CPU: either the kernel's work at these sizes is more than it gets "
            "through in that time (give it less work per launch, or judge it on a GPU), or the kernel does not end",
        )
    return Verdict(
        Status.timeout,
        f"{what} was still running when the kernel's budget of {budget:.0f} s (over all its phases: loading, trials "
        f"and timing) ran out, after {clock.wall():.1f} s in this phase, and was killed; look for a loop that never "
        "ends or a wait on another program",
    )


async def _await_event(
    config: ExecutorConfig,
    ctx: Run,
    worker: WorkerChannel,
    *,
    timeout: float,
    until: tuple[type, ...],
    what: str,
    clock: _Clock,
) -> Event:
    budget = ctx.candidate_budget_s if clock.charge else None
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if budget is not None:
            # the budget's rest, in its unit: CPU time cannot pass faster than wall time times the cores used,
            # and the heartbeat looks again within two seconds
            remaining = min(remaining, budget - clock.spent())
        try:
            event = await worker.receive(min(HEARTBEAT_S, max(remaining, 0.0)))
        except WorkerTimeout:
            now = time.monotonic()
            if budget is not None and clock.spent() >= budget and now < deadline:
                raise _ran_out(ctx, clock, what) from None
            if now >= deadline:
                used = f", {clock.used():.1f} s of it on the CPU" if clock.cpu else ""
                hint = (
                    f"; this is {ctx.check}, whose time ran out: no sign that the kernel hangs"
                    if ctx.check
                    else "; look for a loop that never ends or a wait on another program"
                )
                raise Verdict(
                    Status.timeout,
                    f"{what} did not finish within {timeout:.0f} s of wall time{used}, and was killed{hint}",
                ) from None
            await ctx.report("working", f"{what} ({time.perf_counter() - ctx.started:.0f} s)")
            continue
        except WorkerDied as exc:
            raise faults.died(ctx, worker, exc, what, config) from None
        if isinstance(event, Phase):
            if event.phase == "trial":
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
