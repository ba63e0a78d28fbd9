"""Stage 3b (the CPU backends): a kernel whose dots feed fp32 operands to the tensor cores at plain `tf32`
precision, under a tolerance that wants fp32 accuracy, is checked once more at the task's full reduction lengths.

Such a kernel passes only through a compensation of its own (a high/low split of the operands into several tf32
products), and how much of it survives depends on how long the reduction is: on an H200 a split chained on one
accumulator errs by 6e-5 over K = 8192 and by far less over the handful of terms small sizes leave. The judge
finds the sizes the outputs do not depend on (what the dots reduce over) and gives them back their full values
(at most `REDUCTION_CAP`); the other sizes stay small, so the interpreter's work grows with the reduction alone,
but for a batch raised until the outputs hold `CHECKED_ELEMENTS` (rows a GEMM's tile computes anyway), so that
the normwise error is measured on enough of them. One trial runs there (of the first config of an autotuned
kernel), with the interpreter's emulation of the tensor cores (worker/_tensor_cores.py), and its outputs are
held to the same tolerance. The check is the evaluator's, not part of the candidate's budget: it runs under a
trial timeout of its own (`PROBE_TIMEOUTS` times executor.trial_timeout_s), and one that does not finish leaves
the verdict as it was, with a warning that the precision was not checked.
"""

from __future__ import annotations

from adaexplore.domain import AuditFlag, Backend, Status
from adaexplore.executor.pipeline.stages import numerics, speed
from adaexplore.executor.pipeline.stages.context import Run, Verdict
from adaexplore.executor.pipeline.stages.lane import Lanes
from adaexplore.executor.tasks._small_sizes import with_small_sizes
from adaexplore.executor.tasks._task import task_from_source
from adaexplore.roofline import LaunchWork

__all__ = ["PROBE_TIMEOUTS", "needed", "run"]

# the probe's trial may take this many trial timeouts: its reduction is as long as the task's
PROBE_TIMEOUTS = 4


def needed(ctx: Run) -> bool:
    """Whether the kernel's full-size record shows plain tf32 dots, the tolerance wants fp32 accuracy, and the
    judge found reduction lengths that the small sizes shortened."""
    if ctx.reduction_sizes is None or ctx.candidate_work is None:
        return False
    if speed.fp32_path(ctx.task, ctx.mode) != "tf32x3":
        return False
    return any(
        config.dot_flops.get("tf32")
        for step in ctx.candidate_work.steps
        if isinstance(step, LaunchWork)
        for config in step.configs
    )


async def run(lanes: Lanes, ctx: Run) -> None:
    """Raises:
    Verdict: the kernel is wrong at the full reduction lengths (or fails there in another way).
    """
    if not needed(ctx):
        return
    assert ctx.reduction_sizes is not None
    lengths = ", ".join(f"{name}={ctx.reduction_sizes[name]}" for name in ctx.reduction_names)
    await ctx.report("precision", f"checking its tf32 dots at the task's full reduction length ({lengths})")
    source = with_small_sizes(ctx.task.source, ctx.reduction_sizes, f"the full reduction lengths: {lengths}")
    probe = Run(task_from_source(source, name=ctx.task.name), ctx.code, ctx.mode, ctx.progress)
    probe.spec = ctx.spec.model_copy(update={"trials": 1})
    probe.started = ctx.started
    probe.trial_timeout_s = lanes.config.trial_timeout_s * PROBE_TIMEOUTS
    probe.one_config = True  # an autotuned kernel's configs differ in speed, not in how its products add up
    try:
        with ctx.phase("precision"):
            await numerics.run(lanes, probe, Backend.interpret, timed=False, with_compile=False, fresh_reference=False)
    except Verdict as verdict:
        if verdict.status is Status.timeout:  # the longer check did not fit the budget: said, not held against it
            ctx.add_flags(
                [
                    AuditFlag(
                        code="precision_unchecked",
                        severity="warn",
                        message=f"its tf32 dots were not checked at the task's full reduction length ({lengths}): "
                        f"the check ran out of time ({verdict.message[:200]}); a GPU judges them",
                    )
                ]
            )
            return
        ctx.timing = None  # a kernel that is not correct has no speed
        if verdict.status is Status.mismatch:
            raise Verdict(
                Status.mismatch,
                f"correct at the small sizes, but wrong at the task's full reduction length ({lengths}), where the "
                f"error of its tf32 products adds up: {verdict.message}. On a GPU it fails the same way: use "
                'input_precision="tf32x3" (its small products are summed apart) or "ieee"',
                verdict.error,
            ) from None
        raise
    ctx.add_flags(
        [
            AuditFlag(
                code="precision_checked",
                severity="info",
                message=f"its tf32 dots were also correct at the task's full reduction length ({lengths}), one trial",
            )
        ]
    )
