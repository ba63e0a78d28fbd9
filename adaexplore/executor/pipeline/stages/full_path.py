"""Stage 3c (the CPU backends): a forward that takes another path at the task's full sizes than at the small
sizes its trials ran at.

The trials run at small sizes; the compile check follows the forward at the task's own sizes on shape-only
tensors and records the kernels it launches there. Where those are not the kernels the trials launched, no
trial covered what the kernel computes at the sizes that count: a shortcut taken only at the benchmark's shapes
(PyTorch there, or another kernel) would pass. A forward that launches none of its own Triton kernels at full
size is refused outright. One that launches others (an honest kernel may choose a kernel by size) is judged once
more, in one trial at the task's full sizes, under the evaluator's own time limit (`precision.PROBE_TIMEOUTS`
trial timeouts, not the candidate's budget); one that does not finish there leaves the verdict as it was, with
a warning that the full-size path was not checked.
"""

from __future__ import annotations

from adaexplore.domain import AuditFlag, Backend, Status
from adaexplore.executor.pipeline.stages import numerics
from adaexplore.executor.pipeline.stages.context import Run, Verdict
from adaexplore.executor.pipeline.stages.lane import Lanes
from adaexplore.executor.pipeline.stages.precision import PROBE_TIMEOUTS
from adaexplore.executor.tasks._small_sizes import with_small_sizes
from adaexplore.executor.tasks._task import task_from_source
from adaexplore.roofline import LaunchWork

__all__ = ["run", "unchecked_kernels"]


def unchecked_kernels(ctx: Run) -> tuple[set[str], set[str]] | None:
    """(the kernels launched at full size, those the trials launched) where they differ; None where they agree
    or one of them is unknown (the full-size pass stopped early, or did not run)."""
    work = ctx.candidate_work
    if work is None or not work.complete or ctx.trial_kernels is None or not ctx.task.small_sizes:
        return None
    full = {step.kernel for step in work.steps if isinstance(step, LaunchWork)}
    trials = set(ctx.trial_kernels)
    return None if full == trials else (full, trials)


async def run(lanes: Lanes, ctx: Run) -> None:
    """Raises:
    Verdict: `rejected` where no kernel of the candidate's runs at full size; what the full-size trial found
        where it fails.
    """
    differ = unchecked_kernels(ctx)
    if differ is None:
        return
    full, trials = differ
    checked = ", ".join(sorted(trials)) or "none"
    if not full:
        ctx.timing = None  # a kernel that is not correct has no speed
        raise Verdict(
            Status.rejected,
            "You cannot take another path at the task's full sizes: there forward launches none of your Triton "
            f"kernels (at the small sizes it was checked at it launched {checked}), so no check covers what it "
            "computes at the sizes that count. Run your kernels at every size.",
        )
    others = ", ".join(sorted(full - trials)) or "fewer kernels"
    await ctx.report("full path", f"checking the path it takes at the task's full sizes ({others})")
    probe = Run(
        task_from_source(with_small_sizes(ctx.task.source, {}, "none: the task's own"), name=ctx.task.name),
        ctx.code,
        ctx.mode,
        ctx.progress,
    )
    probe.spec = ctx.spec.model_copy(update={"trials": 1})
    probe.started = ctx.started
    probe.trial_timeout_s = lanes.config.trial_timeout_s * PROBE_TIMEOUTS
    probe.one_config = True
    try:
        with ctx.phase("full_path"):
            await numerics.run(lanes, probe, Backend.interpret, timed=False, with_compile=False, fresh_reference=False)
    except Verdict as verdict:
        if verdict.status is Status.timeout:
            ctx.add_flags(
                [
                    AuditFlag(
                        code="full_path_unchecked",
                        severity="warn",
                        message=f"at the task's full sizes forward launches {others}, which the trials at the "
                        f"small sizes never ran, and the one trial at full size ran out of time: a GPU judges them",
                    )
                ]
            )
            return
        ctx.timing = None
        raise Verdict(
            verdict.status,
            f"correct at the small sizes, but at the task's full sizes forward takes another path ({others}), "
            f"and there: {verdict.message}",
            verdict.error,
        ) from None
    ctx.add_flags(
        [
            AuditFlag(
                code="full_path_checked",
                severity="info",
                message=f"at the task's full sizes forward launches {others}; one trial there was correct too",
            )
        ]
    )
