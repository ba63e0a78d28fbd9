"""Whose fault a failure is: the candidate's (a crash, an exception, a hang, a signal its worker got that
adaexplore did not send) or adaexplore's own (`infra_error`: a worker the machine's out-of-memory killer
killed, a judge lost or out of its memory budget, a broken protocol), and the words a result says about it."""

from __future__ import annotations

import signal

from adaexplore.config import ExecutorConfig
from adaexplore.domain import Status
from adaexplore.errors import EvaluatorError
from adaexplore.executor.host._process import WorkerDied
from adaexplore.executor.host._spawn import WorkerChannel
from adaexplore.executor.pipeline.stages.context import Run, Verdict
from adaexplore.executor.wire._protocol import Failed

__all__ = ["SIGNALS", "died", "infra_twice", "is_out_of_memory", "judge_over_budget", "retried_note"]

SIGNALS = {
    -11: "SIGSEGV (segmentation fault)",
    -6: "SIGABRT (abort)",
    -9: "SIGKILL",
    -7: "SIGBUS",
    -8: "SIGFPE",
    -4: "SIGILL",
    -15: "SIGTERM",
    -1: "SIGHUP",
    -2: "SIGINT",
}
# Signals a process gets from outside (the out-of-memory killer, a shell, a scheduler), which the candidate's own
# code may send it too; its faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) are the candidate's.
EXTERNAL_SIGNALS = frozenset({signal.SIGKILL, signal.SIGTERM, signal.SIGHUP, signal.SIGINT})
_OOM_TYPES = frozenset({"OutOfMemoryError", "torch.OutOfMemoryError", "torch.cuda.OutOfMemoryError"})


def signal_name(code: int) -> str:
    return SIGNALS.get(code, f"signal {-code}")


def died(ctx: Run, worker: WorkerChannel, exc: WorkerDied, what: str, config: ExecutorConfig) -> Verdict:
    """The verdict on a candidate's worker that ended while the evaluator waited for it."""
    if worker.violation is not None:
        return Verdict(Status.runtime_error, f"{worker.violation} during {what}")
    code = worker.returncode
    if code == -signal.SIGXFSZ:
        return Verdict(
            Status.runtime_error,
            f"the candidate wrote a file larger than the limit of {config.worker_disk_bytes / 2**20:.0f} MiB "
            f"(executor.worker_disk_bytes) during {what}",
        )
    if code is not None and code < 0:
        name = signal_name(code)
        if -code in EXTERNAL_SIGNALS and not worker.killed:
            oom = worker.oom_killed()
            if oom:
                return Verdict(
                    Status.infra_error,
                    f"the process running the candidate was killed by {name} during {what}: the machine's "
                    "out-of-memory killer killed it (its memory cgroup counted the kill), for memory the whole "
                    "machine lacked",
                    phase=what,
                )
            # the candidate's code ran in it and may send its own process any signal: unless the evaluator sent
            # it, or the out-of-memory killer did, it is the candidate's doing
            witness = (
                "no out-of-memory kill was counted in its memory cgroup"
                if oom is False
                else "this machine keeps no count of out-of-memory kills to tell otherwise"
            )
            return Verdict(
                Status.crashed,
                f"the process running the candidate was killed by {name} during {what}, a signal adaexplore did "
                f"not send ({witness}); the candidate's code may have sent it, or exhausted the machine's memory",
            )
        return Verdict(
            Status.crashed,
            f"the process running the candidate was killed by {name} during {what}; "
            "look for out-of-bounds memory access",
        )
    tail = ctx.scrub(worker.output.text())[-1500:]
    return Verdict(
        Status.crashed,
        f"the process running the candidate exited (code {code}) during {what}. {exc.detail} {tail}".strip(),
    )


def is_out_of_memory(event: Failed) -> bool:
    """Whether a failure is CUDA running out of device memory."""
    texts = [event.message] + ([event.error.message] if event.error is not None else [])
    typed = event.error is not None and event.error.type in _OOM_TYPES
    return typed or any("CUDA out of memory" in text for text in texts)


async def judge_over_budget(ctx: Run, event: Failed, what: str) -> Verdict | None:
    """An infra verdict when the candidate ran out of device memory while the judge held more than its
    budget; None when the judge kept to it (then the memory was the candidate's to lack) or cannot say."""
    if ctx.judge is None or not is_out_of_memory(event):
        return None
    try:
        report = await ctx.judge.memory()
    except EvaluatorError:
        return None
    # what the judge's allocator keeps reserved counts too: that memory is not the candidate's either
    held = max(report.cached_bytes, report.reserved_bytes) if report is not None else 0
    if report is None or held <= report.budget_bytes:
        return None
    return Verdict(
        Status.infra_error,
        f"the candidate ran out of GPU memory during {what} while adaexplore's judge held "
        f"{held / 2**30:.2f} GiB, past its budget of "
        f"{report.budget_bytes / 2**30:.2f} GiB: {ctx.scrub(event.message)}",
        event.error,
        phase=what,
        judge=ctx.judge.worker,
        retire=True,
        memory=True,
    )


def retried_note(first: Verdict) -> str:
    return (
        f" (retried once on a fresh worker: the first attempt failed through no fault of the candidate "
        f"during {first.phase or 'the evaluation'}: {first.message})"
    )


def infra_twice(first: Verdict, second: Verdict) -> str:
    return (
        f"adaexplore failed twice in a row, through no fault of the candidate: during "
        f"{second.phase or 'the evaluation'}: {second.message} (the first attempt, during "
        f"{first.phase or 'the evaluation'}: {first.message}). This is adaexplore's fault or the machine's, not "
        "the kernel's: report it to adaexplore's maintainers with this message, the evaluation's output and "
        "the output of `adaexplore --version`"
    )
