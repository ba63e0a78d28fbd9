"""The candidate's budget as one wait on its worker spends it, and the words of a `timeout`: which phase ran out,
of what, and where the candidate was (its Python line, or its kernel's), from the stack its worker writes before
it is killed.

On a GPU the budget is wall time over all the candidate's phases. On the CPU backends it is the time the candidate's
own code runs, its worker's CPU time (read from the system, so a busy machine does not spend it) and, where a client
waits for the answer (`Run.candidate_budget_wall`), the wall time the client has waited: the whole evaluation's
since it began (the worker's handover and the reference included, which a busy machine slows as much as the
candidate), less a reserve for stopping the worker and answering, so that the answer comes within the budget
whatever phase the time went to; though never before the candidate's own phases have had half the budget (a worker
that took long to start on a busy machine is not the kernel's doing). The Triton compiler's time is not counted in
either (the worker says when each compile starts and ends), save a single compile that goes on past the whole
budget."""

from __future__ import annotations

import time
from pathlib import PurePosixPath

from adaexplore.domain import Backend, Status
from adaexplore.executor.host._spawn import WorkerChannel
from adaexplore.executor.host._stack import Frame, sample_stack, thread_stacks
from adaexplore.executor.pipeline.stages.context import Run, Verdict

__all__ = ["Clock", "phase_timeout", "ran_out", "wall_left", "where_it_was"]

_CANDIDATE = "candidate.py"
# the share of its wall time a worker gets on the CPU where the machine is not busy
_FAIR_SHARE = 0.9
# of a waiting client's budget, what is kept for answering once the candidate is stopped (its stack read, its
# worker killed, the verdict written): this share of the budget, at most _ANSWER_S seconds
_ANSWER_SHARE, _ANSWER_S = 0.05, 2.0
# the share of a waiting client's budget the candidate's own phases always get in wall time, however long its
# worker took to start on a busy machine: a slow start is the machine's, not the kernel's
_OWN_SHARE = 0.5


def wall_left(budget: float, call_wall: float, own_wall: float) -> float:
    """What a waiting client's budget leaves the candidate, in wall time: the budget counted from the evaluation's
    start (`call_wall` spent), less the reserve for answering; but never less than `_OWN_SHARE` of the budget
    counted in the candidate's own phases alone (`own_wall` spent)."""
    return max(budget - min(_ANSWER_S, _ANSWER_SHARE * budget) - call_wall, _OWN_SHARE * budget - own_wall)


class Clock:
    """What one wait on a worker spends of the candidate's budget."""

    def __init__(self, ctx: Run, worker: WorkerChannel, charge: bool) -> None:
        self.ctx, self.worker, self.charge = ctx, worker, charge
        self.on_cpu = worker.backend != Backend.cuda.value
        self.wall0 = time.monotonic()
        self.cpu0 = worker.cpu_seconds() if self.on_cpu else None
        # the budget's unit is CPU time (on the CPU backends, where the system tells it)
        self.cpu = self.cpu0 is not None
        self.compile_wall = self.compile_cpu = 0.0
        # the kernel being compiled now, and the wall and CPU time of this wait when its compile began
        self.compiling: tuple[str, float, float] | None = None

    def _raw(self) -> tuple[float, float]:
        wall = time.monotonic() - self.wall0
        if self.cpu0 is not None:
            now = self.worker.cpu_seconds()
            if now is not None:
                return wall, max(0.0, now - self.cpu0)
        return wall, wall

    def compile_started(self, kernel: str) -> None:
        if self.on_cpu and self.compiling is None:
            self.compiling = (kernel, *self._raw())

    def compile_ended(self) -> None:
        if self.compiling is not None:
            _, wall0, cpu0 = self.compiling
            wall, cpu = self._raw()
            self.compile_wall += wall - wall0
            self.compile_cpu += cpu - cpu0
            self.compiling = None

    def compile_overran(self) -> bool:
        """Whether the compile under way has gone on past the whole budget (then it counts)."""
        budget = self.ctx.candidate_budget_s
        return self.compiling is not None and budget is not None and self._raw()[0] - self.compiling[1] > budget

    def own(self) -> tuple[float, float]:
        """The wall and CPU time of this wait that count: all of it on a GPU; on the CPU backends, the compiler's
        left out."""
        wall, cpu = self._raw()
        wall, cpu = wall - self.compile_wall, cpu - self.compile_cpu
        if self.compiling is not None and not self.compile_overran():
            _, wall0, cpu0 = self.compiling
            wall, cpu = wall0 - self.compile_wall, cpu0 - self.compile_cpu
        return max(0.0, wall), max(0.0, cpu)

    def used(self) -> float:
        """What this wait has spent so far, in the budget's unit."""
        wall, cpu = self.own()
        return cpu if self.cpu else wall

    def spent(self) -> float:
        """The candidate's budget spent so far, this wait included."""
        return self.ctx.candidate_spent_s + (self.used() if self.charge else 0.0)

    def wall_spent(self) -> float:
        """Its own wall time so far, this wait included."""
        return self.ctx.candidate_wall_s + (self.own()[0] if self.charge else 0.0)

    def call_wall(self) -> float:
        """The wall time a waiting client has waited: the evaluation's since it began, the Triton compiler's left
        out (of every wait so far, this one's included)."""
        raw_wall, _ = self._raw()
        compiling_here = raw_wall - self.own()[0]
        return max(0.0, time.perf_counter() - self.ctx.started - self.ctx.compile_wall_s - compiling_here)

    def wall_bound(self) -> bool:
        """Whether wall time bounds the budget besides CPU time (on the CPU backends, where a client waits)."""
        return self.cpu and self.ctx.candidate_budget_wall

    def left(self) -> float | None:
        """What is left of the budget, in seconds of wall time at the soonest; None: no budget."""
        budget = self.ctx.candidate_budget_s if self.charge else None
        if budget is None:
            return None
        # CPU time cannot pass faster than wall time times the cores used, and the caller looks again within two
        # seconds
        left = budget - self.spent()
        if self.wall_bound():
            left = min(left, wall_left(budget, self.call_wall(), self.wall_spent()))
        return left

    def out(self) -> bool:
        left = self.left()
        return left is not None and left <= 0

    def settle(self) -> None:
        """Add this wait to what the candidate spent."""
        self.ctx.compile_wall_s += self._raw()[0] - self.own()[0]
        if self.charge:
            self.ctx.candidate_spent_s += self.used()
            self.ctx.candidate_wall_s += self.own()[0]


def _advice(clock: Clock) -> str:
    if clock.worker.backend == Backend.interpret.value:
        return (
            "The interpreter runs every program of a launch in turn on the CPU: either the kernel's work at these "
            "sizes is more than it gets through in that time (give it less work per launch, or judge it on a GPU), "
            "or the kernel does not end"
        )
    return "Look for a loop that never ends or a wait on another program"


def ran_out(ctx: Run, clock: Clock, what: str, where: str) -> Verdict:
    """The `timeout` of a candidate whose budget ran out during `what`."""
    budget = ctx.candidate_budget_s or 0.0
    if not clock.cpu:
        return Verdict(
            Status.timeout,
            f"{what} was still running when the kernel's budget of {budget:.0f} s (over all its phases: loading, "
            f"trials and timing) ran out, after {clock.own()[0]:.1f} s in this phase, and was killed{where}. "
            f"{_advice(clock)}",
        )
    wall, _ = clock.own()
    compiler = f" (the Triton compiler's {clock.compile_cpu:.1f} s not counted)" if clock.compile_cpu >= 0.05 else ""
    if clock.compiling is not None and clock.compile_overran():
        what = f"{what}, in the compile of kernel {clock.compiling[0]} for sm_90,"
    # a wall-time budget that ran out on a machine that gave the candidate (nearly) all the CPU it could use is the
    # candidate's own doing too
    if clock.spent() >= budget or clock.spent() >= _FAIR_SHARE * clock.wall_spent():
        unit = " of CPU time" if clock.spent() >= budget else ""
        return Verdict(
            Status.timeout,
            f"{what} was still running when the kernel's budget of {budget:.0f} s{unit} ran out "
            f"({clock.spent():.1f} s of CPU time for its own code{compiler}, {wall:.1f} s of wall time in this "
            f"phase), and was killed{where}. {_advice(clock)}",
        )
    before = clock.call_wall() - clock.wall_spent()
    others = f", {before:.1f} s of it before and between the candidate's phases (its worker's start, the reference)"
    return Verdict(
        Status.timeout,
        f"{what} was still running when the call's budget of {budget:.0f} s of wall time (counted from the "
        f"evaluation's start{others if before >= 0.5 else ''}) ran out, and was killed{where}. This machine is busy: "
        f"in that time the candidate's own code had {clock.spent():.1f} s of CPU time{compiler}, so a kernel that "
        f"needs more is not necessarily stuck. {_advice(clock)}",
    )


def phase_timeout(clock: Clock, what: str, timeout: float, where: str, *, check: str | None = None) -> Verdict:
    """The `timeout` of a phase that did not finish within its own timeout; `check`: the evaluator's own check that
    ran (whose running out of time says nothing of a hang)."""
    cpu = clock._raw()[1]
    used = f", {cpu:.1f} s of it on the CPU" if clock.cpu else ""
    if check:
        return Verdict(
            Status.timeout,
            f"{what} did not finish within {timeout:.0f} s of wall time{used}, and was killed; this is {check}, "
            "whose time ran out: no sign that the kernel hangs",
        )
    return Verdict(
        Status.timeout,
        f"{what} did not finish within {timeout:.0f} s of wall time{used}, and was killed{where}. {_advice(clock)}",
    )


async def where_it_was(ctx: Run, worker: WorkerChannel, clock: Clock) -> str:
    """Where the candidate was, from the stack its worker writes when asked, as words to follow a verdict
    (`; it was at …`); empty where the worker wrote none."""
    stack = await sample_stack(worker)
    if stack is None:
        return ""
    threads = thread_stacks(stack)
    for frames in threads:
        ours = [i for i, f in enumerate(frames) if _is_candidate(f)]
        if ours:
            return "; " + _describe(ctx, frames, ours)
    if clock.compiling is not None:
        return f"; it was in Triton's compiler, compiling kernel {clock.compiling[0]}"
    first = next((frames[0] for frames in threads if frames), None)
    if first is None:
        return ""
    return (
        f"; the candidate's code was not on its stack: it was in {_short(first.path)}, line {first.line}, "
        f"in {first.name}"
    )


def _is_candidate(frame: Frame) -> bool:
    return frame.path == _CANDIDATE or frame.path.endswith("/" + _CANDIDATE)


def _describe(ctx: Run, frames: list[Frame], ours: list[int]) -> str:
    inner = frames[ours[0]]
    text = f"it was at line {inner.line} of the candidate, in {inner.name}{_quote(ctx, inner.line)}"
    outer = ours[0] + 1 < len(frames) and frames[ours[0] + 1]
    if outer and "triton" in PurePosixPath(outer.path).parts:
        text = f"it was in the Triton kernel {inner.name}, at line {inner.line} of the candidate"
        text += _quote(ctx, inner.line)
    callers = [frames[i] for i in ours[1:]]
    if callers:
        text += f" (called from line {callers[0].line}, in {callers[0].name})"
    return text


def _quote(ctx: Run, line: int) -> str:
    lines = ctx.code.splitlines()
    if 0 < line <= len(lines) and lines[line - 1].strip():
        return f": `{lines[line - 1].strip()[:120]}`"
    return ""


def _short(path: str) -> str:
    parts = PurePosixPath(path).parts
    for anchor in ("site-packages", "adaexplore"):
        if anchor in parts:
            return "/".join(parts[parts.index(anchor) + (anchor == "site-packages") :])
    return PurePosixPath(path).name
