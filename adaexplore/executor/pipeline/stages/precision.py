"""Stage 3b (the CPU backends): a kernel whose dots round or split fp32 operands for the tensor cores (plain `tf32`,
Triton's `tf32x3`, bf16 or fp16 halves), under a tolerance that wants fp32 accuracy, is checked once more at the
task's full reduction lengths.

Such a kernel passes only through a compensation of its own (a high/low split of the operands into several
products), and how much of it survives depends on how long the reduction is: on an H200 a split chained on one
accumulator errs by 6e-5 over K = 8192 and by far less over the handful of terms small sizes leave. The judge
finds the sizes the outputs do not depend on (what the dots reduce over) and gives them back their full values
(at most `REDUCTION_CAP`); the other sizes stay small (the batch raised until the outputs hold `CHECKED_ELEMENTS`),
so that the interpreter runs the whole reduction for a sample of output tiles, often one program. One trial runs
there (of the first config of an autotuned kernel, its launches not compiled for sm_90 again, in a worker the
pool started beside the trials), with the interpreter's emulation of the tensor cores (worker/cpu/_tensor_cores.py),
and its outputs are held to the same tolerance.

The normwise error of a sample strays from that of every output the GPU computes; the judge says by how much (a
jackknife's standard error). A normwise error within `SPREADS` of that spread of the tolerance, either side, with
no element over its own, is too close to call from a sample: the kernel is not failed for it, and a
`precision_borderline` warning says so. Otherwise a miss is a mismatch, and a pass an info flag; each names the
precision path the full-size compile showed (stages/precision_path.py) and the error measured. The check is the
evaluator's, not part of the candidate's budget: it runs under a trial timeout of its own (`PROBE_TIMEOUTS` times
executor.trial_timeout_s), and one that does not finish leaves the verdict as it was, with a warning that the
precision was not checked and that running out of this time is no sign of a hang.
"""

from __future__ import annotations

from adaexplore.domain import AuditFlag, Backend, Status, TrialResult
from adaexplore.executor.pipeline.stages import numerics
from adaexplore.executor.pipeline.stages.context import Run, Verdict
from adaexplore.executor.pipeline.stages.lane import Lanes
from adaexplore.executor.pipeline.stages.precision_path import needed, precision_path
from adaexplore.executor.tasks._small_sizes import with_small_sizes
from adaexplore.executor.tasks._task import task_from_source

__all__ = ["PROBE_TIMEOUTS", "SPREADS", "run"]

# the probe's trial may take this many trial timeouts: its reduction is as long as the task's
PROBE_TIMEOUTS = 4
# a normwise miss within this many of the sample's spreads is too close to call
SPREADS = 2.0
_ADVICE = (
    "add each K step's products into a fresh accumulator, the small ones first, and that to the running sum outside "
    'tl.dot (as input_precision="tf32x3" does with its three tf32 products), or use input_precision="tf32x3" or '
    '"ieee"'
)


def _measured(trial: TrialResult | None, norm_rtol: float | None) -> str:
    if trial is None or trial.norm_rel_error is None:
        return "its error was not measured"
    if trial.norm_rel_error == 0:  # no split product is exact over thousands of terms: outputs all zero, most likely
        return (
            "no error at all: its outputs there equal the reference's, as they do where both are all zero (a ReLU "
            "of values that are all negative), and then the check measured nothing"
        )
    text = f"normwise error {trial.norm_rel_error:.3g}"
    if trial.norm_rel_spread is not None:
        text += f" (± {trial.norm_rel_spread:.2g}, the spread of a sample)"
    if norm_rtol:
        text += f", {trial.norm_rel_error / norm_rtol:.2f} of the {norm_rtol:.3g} allowed"
    return text


def _too_close(trial: TrialResult | None, norm_rtol: float | None) -> bool:
    """A normwise error within SPREADS of the sample's spread of the tolerance, either side, and no element
    over its own tolerance."""
    if trial is None or norm_rtol is None or trial.norm_rel_error is None or trial.norm_rel_spread is None:
        return False
    if trial.max_scaled_error is None or trial.max_scaled_error > 1.0:
        return False
    return abs(trial.norm_rel_error - norm_rtol) <= SPREADS * trial.norm_rel_spread


def _borderline(path: str, lengths: str, trial: TrialResult | None, norm_rtol: float | None) -> AuditFlag:
    return AuditFlag(
        code="precision_borderline",
        severity="warn",
        message=f"its dots, {path}, at the task's full reduction length ({lengths}): {_measured(trial, norm_rtol)}; "
        "too close to the tolerance to call from a sample of the outputs, so not held against it here, but a GPU's "
        "trials over every output may fail it",
    )


async def run(lanes: Lanes, ctx: Run) -> None:
    """Raises:
    Verdict: the kernel is wrong at the full reduction lengths (or fails there in another way).
    """
    if not needed(ctx):
        return
    assert ctx.reduction_sizes is not None
    lengths = ", ".join(f"{name}={ctx.reduction_sizes[name]}" for name in ctx.reduction_names)
    path = precision_path(ctx)
    await ctx.report("precision", f"checking its dots at the task's full reduction length ({lengths}): {path}")
    source = with_small_sizes(ctx.task.source, ctx.reduction_sizes, f"the full reduction lengths: {lengths}")
    probe = Run(task_from_source(source, name=ctx.task.name), ctx.code, ctx.mode, ctx.progress)
    probe.spec = ctx.spec.model_copy(update={"trials": 1})
    probe.started = ctx.started
    probe.trial_timeout_s = lanes.config.trial_timeout_s * PROBE_TIMEOUTS
    probe.one_config = True  # an autotuned kernel's configs differ in speed, not in how its products add up
    probe.reduction_check = True
    probe.check = f"the evaluator's precision check at the task's full reduction length ({lengths})"
    try:
        with ctx.phase("precision"):
            await numerics.run(lanes, probe, Backend.interpret, timed=False, with_compile=False, fresh_reference=False)
    except Verdict as verdict:
        _judged(ctx, probe, verdict, lengths, path)
        return
    trial = probe.correctness.trials[0] if probe.correctness and probe.correctness.trials else None
    norm_rtol = probe.correctness.tolerance.norm_rtol if probe.correctness else None
    if _too_close(trial, norm_rtol):
        ctx.add_flags([_borderline(path, lengths, trial, norm_rtol)])
        return
    ctx.add_flags(
        [
            AuditFlag(
                code="precision_checked",
                severity="info",
                message=f"its dots, {path}, were also correct at the task's full reduction length ({lengths}), one "
                f"trial on a sample of the outputs: {_measured(trial, norm_rtol)}",
            )
        ]
    )


def _judged(ctx: Run, probe: Run, verdict: Verdict, lengths: str, path: str) -> None:
    """What a probe that did not pass says of the kernel.

    Raises:
        Verdict: the kernel is wrong at the full reduction lengths (or fails there in another way).
    """
    if verdict.status is Status.timeout:  # the longer check did not fit its time: said, not held against it
        limit = probe.trial_timeout_s or 0.0
        ctx.add_flags(
            [
                AuditFlag(
                    code="precision_unchecked",
                    severity="warn",
                    message=f"its dots, {path}, were not checked at the task's full reduction length ({lengths}): "
                    f"the evaluator's check ran out of its own {limit:.0f} s, most likely for the interpreter's "
                    "slowness at this length, and that is not a sign that the kernel hangs (its trials at the small "
                    "sizes ended); a GPU judges them",
                )
            ]
        )
        return
    trial = next((t for t in probe.correctness.trials if not t.passed), None) if probe.correctness else None
    norm_rtol = probe.correctness.tolerance.norm_rtol if probe.correctness else None
    if verdict.status is Status.mismatch and _too_close(trial, norm_rtol):
        ctx.add_flags([_borderline(path, lengths, trial, norm_rtol)])
        return
    ctx.timing = None  # a kernel that is not correct has no speed
    if verdict.status is Status.mismatch:
        raise Verdict(
            Status.mismatch,
            f"correct at the small sizes, but wrong at the task's full reduction length ({lengths}), where the "
            f"error of its dots, {path}, adds up ({_measured(trial, norm_rtol)}): {verdict.message}. On a GPU it "
            f"fails the same way: {_ADVICE}",
            verdict.error,
        ) from None
    raise verdict
