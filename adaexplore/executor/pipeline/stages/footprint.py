"""The device memory an evaluation takes on a GPU, estimated before it takes any, and its reservation in the
GPU's book (`host/_gpu_memory.py`), so that evaluations that would not fit side by side wait for each other.

The estimate comes from what the judge records of the task's reference at full size on shape-only tensors (its
inputs', parameters' and outputs' bytes, and its largest operator's output), asked for once per task and kept
in the book. It adds up what the judge holds for the evaluation (the reference models, float64 copies included,
the inputs of every trial and of timing, the buffers it shares with the candidate's worker, the reference's
outputs, and what computing or timing the reference takes meanwhile) and what the candidate's worker holds at
most (its model, a trial's inputs twice with their outputs, or timing's rotated inputs, and the copies it
keeps for the rechecks; its CUDA context is the book's, see `LaneBook.memory`). Each part is taken at its peak,
so the sum is above what is ever held at once: an evaluation waits rather than fails. Where the task cannot be
followed on shape-only tensors the size is unknown, and the evaluation holds the device alone.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from adaexplore.config import ExecutorConfig
from adaexplore.domain import Status
from adaexplore.errors import EvaluatorError
from adaexplore.executor.host._gpu_memory import GpuMemory
from adaexplore.executor.host._pool import JudgeClient
from adaexplore.executor.pipeline.stages.context import Run, Verdict
from adaexplore.executor.wire._modes import mode_spec
from adaexplore.executor.wire._protocol import JobSpec, MemoryQuery, MemoryReport
from adaexplore.roofline import OpWork, TaskWork

__all__ = ["Footprint", "admission", "estimate", "need"]

# the buffers per input that timing rotates through (worker/timing/_timing.py)
_RING = 3


@dataclass(frozen=True)
class Footprint:
    """The bytes one evaluation takes at most: on the judge's side, and on the candidate's worker's."""

    judge: int
    worker: int

    @property
    def total(self) -> int:
        return self.judge + self.worker


def estimate(work: TaskWork, job: JobSpec, config: ExecutorConfig) -> Footprint:
    """What an evaluation of `job` takes on the device, from what its reference does at full size (see the
    module's docstring)."""
    spec = mode_spec(job.mode)
    inputs, params, outputs = int(work.input_bytes), int(work.parameter_bytes), int(work.output_bytes)
    step = max(_largest_output(work), outputs)
    float64 = spec.reference_precision == "float64"
    # a float64 copy of a float32 tensor is twice as large, of a half-precision one four times
    wide = (4 if _half_precision(work) else 2) if float64 else 1
    trials = job.trials
    sets = max(trials, min(config.recheck_reps, config.recheck_bytes // outputs)) if outputs else trials
    held = (
        params * (1 + (wide if float64 else 0))  # the task's model, and its float64 copy
        + (trials + 2) * inputs  # every trial's inputs, timing's, and the first trial's drawn again for its checks
        + (trials + 1) * inputs  # their copy in the buffer the candidate's worker reads
        + trials * outputs * wide  # the reference's outputs
        + sets * outputs  # the buffer the candidate writes its outputs into
    )
    computing = trials * outputs + inputs * wide + 2 * step * wide  # native outputs, a trial upcast, one step's tensors
    timing = (1 + _RING) * inputs + 2 * outputs + step
    judge = held + max(computing, timing)
    kept = min(config.recheck_reps * outputs, config.recheck_bytes)
    trial = 2 * inputs + outputs + 2 * step  # the call's inputs and their pristine copy, its outputs
    # timing's inputs, their pristine copy, the rotated buffers, a kept call's inputs and their original rebuilt
    timed = (4 + _RING) * inputs + 3 * outputs + kept + 2 * step
    worker = params + max(trial, timed)  # (its CUDA context is counted with the GPU's resident processes)
    return Footprint(judge=judge, worker=worker)


def _largest_output(work: TaskWork) -> int:
    return int(max((s.bytes_written for s in work.forward.steps if isinstance(s, OpWork)), default=0))


def _half_precision(work: TaskWork) -> bool:
    return any(isinstance(s, OpWork) and s.dtype in ("float16", "bfloat16") for s in work.forward.steps)


async def need(
    judge: JudgeClient, book: GpuMemory, config: ExecutorConfig, job: JobSpec, *, worker: bool
) -> int | None:
    """The bytes to reserve for `job` (with its candidate's worker, or the judge's part alone); None where the
    task's size is unknown. The judge is asked once per task, and tells the device's memory too.

    Raises:
        EvaluatorError: the judge could not be asked.
    """
    key = (job.task_path, job.cast_floats_to)
    if key not in book.works or not book.total:
        query = MemoryQuery(task_path=job.task_path, cast_floats_to=job.cast_floats_to)
        report = await judge.request(query, config.load_timeout_s)
        if not isinstance(report, MemoryReport):
            raise EvaluatorError(f"unexpected {report.kind} message from the judge when asked for the task's size")
        book.works[key] = report.work
    work = book.works[key]
    if work is None:
        return None
    footprint = estimate(work, job, config)
    return footprint.total if worker else footprint.judge


@contextlib.asynccontextmanager
async def admission(
    book: GpuMemory | None, judge: JudgeClient | None, ctx: Run, config: ExecutorConfig
) -> AsyncIterator[Callable[[JobSpec], Awaitable[None]]]:
    """A function that reserves a job's memory, which is held until this context ends (after the candidate's
    worker has ended, so that the memory it held is free again). Nothing is reserved without a book (the CPU
    backends)."""
    async with contextlib.AsyncExitStack() as stack:

        async def admit(job: JobSpec) -> None:
            if book is None or judge is None:
                return
            try:
                size = None if ctx.alone else await need(judge, book, config, job, worker=True)
            except EvaluatorError as exc:
                raise Verdict(Status.infra_error, str(exc), phase="asking the judge for the task's size") from exc
            if book.waiting or not book.fits(size):
                wanted = "the whole GPU" if size is None else f"{size / 2**30:.1f} GiB of GPU memory"
                await ctx.report("waiting", f"waiting for {wanted} (other evaluations hold it)")
            with ctx.phase("wait_memory"):
                grant = await stack.enter_async_context(book.reserve(size))
            ctx.held_alone, ctx.reserved_bytes = grant.alone, grant.nbytes

        yield admit
