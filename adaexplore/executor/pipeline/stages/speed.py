"""The verdict's speed: the task's speed of light on the GPU that timed the kernel (or on the target GPU where
none did), the kernel's fraction of it where it was timed, and an estimate of its time where it was not.

The reference's record comes from the judge, which never imports a candidate. The candidate's comes from its own
worker, so it is used only where it matches what the candidate did in its trials: the same Triton kernels, each
launched as often. A record that does not match, or that stopped early, gives no estimate, and the verdict says
why.
"""

from __future__ import annotations

from adaexplore.config import ExecutorConfig
from adaexplore.domain import AuditFlag, Estimate, EstimatePart, KernelCost, Mode, SpeedOfLight, Status
from adaexplore.executor.host._environment import Environment
from adaexplore.executor.tasks._task import Task
from adaexplore.executor.wire._modes import mode_spec, tolerance_for
from adaexplore.listing import first_of
from adaexplore.roofline import (
    CALIBRATION,
    DEFAULT_TARGET,
    GPUS,
    PATHS,
    ForwardWork,
    GpuCalibration,
    GpuSpec,
    LaunchWork,
    OpWork,
    TaskWork,
    estimate_forward,
    gpu_for_device,
    gpu_spec,
    matmul_path,
    normwise_budget,
    speed_of_light,
)

__all__ = [
    "advice_flags",
    "calibration_for",
    "describe_estimate",
    "describe_sol",
    "estimate_for",
    "faster_than_light",
    "fp32_path",
    "idle_sm_flags",
    "sol_for",
    "target_gpu",
]


def target_gpu(config: ExecutorConfig, environment: Environment | None, device: int | None) -> GpuSpec | None:
    """The GPU speeds are for: `executor.target_gpu` when it names one; else the GPU that ran the evaluation
    (None where the table does not know it); else, on a machine without a GPU, an H200.

    Raises:
        ConfigError: `executor.target_gpu` names no GPU of the table.
    """
    if config.target_gpu != "auto":
        return gpu_spec(config.target_gpu)
    if environment is not None and environment.gpus:
        return gpu_for_device(environment.gpus[device or 0])
    return GPUS[DEFAULT_TARGET]


def _budget(task: Task, mode: Mode, dtype: str) -> float:
    """The normwise error the task's tolerance in `mode` admits on outputs of `dtype` (strict's where the mode
    has none for this task: mode flashinfer without a TOLERANCE)."""
    try:
        tolerance = tolerance_for(mode, dtype, task.allowed_precision, task.tolerance)
    except ValueError:
        tolerance = tolerance_for(Mode.strict, dtype, task.allowed_precision)
    return normwise_budget(tolerance)


def fp32_path(task: Task, mode: Mode) -> str:
    """Whether fp32 products need a split of their operands to pass the task's tolerance in `mode`, in the words
    of Triton's input precisions: "tf32x3" where they do (fp32 accuracy), "tf32" where one product passes."""
    path = matmul_path("float32", _budget(task, mode, "float32"), GPUS[DEFAULT_TARGET])
    return "tf32x3" if path.products > 1 or path.name in ("ieee", "fp64") else "tf32"


def sol_for(task: Task, mode: Mode, work: TaskWork | None, gpu: GpuSpec | None) -> SpeedOfLight | None:
    """The task's speed of light on `gpu`, each dtype of its products by the fastest path its tolerance in `mode`
    admits (None without a record of the reference or a GPU of the table)."""
    if work is None or gpu is None:
        return None
    dtypes = {s.dtype for s in work.forward.steps if isinstance(s, OpWork) and s.flops} | {"float32"}
    return speed_of_light(work, gpu, {dtype: _budget(task, mode, dtype) for dtype in dtypes})


def _paths_said(sol: SpeedOfLight) -> str:
    """How its products were taken: "three bf16 (or fp16) products of ..." (per dtype where there are several)."""
    paths = sol.matmul_paths or {"float32": sol.fp32_matmuls}

    def words(name: str) -> str:
        return PATHS[name].words if name in PATHS else name

    if len(paths) == 1:
        return words(next(iter(paths.values())))
    return "; ".join(f"{dtype} ones as {words(name)}" for dtype, name in sorted(paths.items()))


def describe_sol(sol: SpeedOfLight, eager_ms: float | None = None) -> str:
    """One sentence: "On an H200 this task cannot run faster than 0.41 ms: it must move 1.9 GB (memory-bound)"; a
    compute-bound task's says the path its products were assumed to take."""
    if sol.bound == "memory":
        why = f"it must move {_size(sol.bytes)} (memory-bound)"
    elif sol.bound == "compute":
        why = (
            f"it must compute {sol.flops / 1e9:.4g} GFLOP of matrix products (compute-bound, taken at best as "
            f"{_paths_said(sol)}, the fastest path its tolerance admits)"
        )
    else:
        why = "one kernel launch costs that much (launch-bound)"
    text = f"On an {sol.gpu} this task cannot run faster than {sol.ms:.3g} ms: {why}"
    if eager_ms is not None:
        text += f"; eager PyTorch measured {eager_ms:.3g} ms here"
    if sol.uncounted:
        text += f" (FLOPs of {', '.join(sol.uncounted)} not counted)"
    if not sol.complete:
        text += " (the reference's forward could not be followed to its end: a lower bound)"
    return text


def faster_than_light(sol: SpeedOfLight, ms: float, eager_ms: float, *, measured: bool) -> AuditFlag | None:
    """What to say of a kernel whose measured (or estimated) time is under its task's speed of light: under the
    part no timing can beat (`floor_ms`), a warning that says what is probably blind and what its speedup counts
    for (eager's time over that floor, `Evaluation.speedup_ceiling`); under one launch's cost or the HBM's time for
    traffic a cache can hold, a note. None where it is not under the speed of light."""
    if ms <= 0 or ms >= sol.ms:
        return None
    what = f"{'measured' if measured else 'estimated'} {ms:.3g} ms"
    if ms >= sol.floor_ms:
        if sol.bound == "launch":
            soft = f"under one launch's cost on an {sol.gpu} ({sol.ms:.3g} ms, a figure measured back to back): timing"
            soft += " noise at this scale, not a kernel faster than the hardware"
        else:
            soft = (
                f"under the time its least traffic ({_size(sol.bytes)}) takes at an {sol.gpu}'s HBM peak "
                f"({sol.memory_ms:.3g} ms); what fits in the L2 cache may never reach the HBM while a kernel is "
                "timed, so this is no sign of skipped work"
            )
        return AuditFlag(code="under_soft_bound", severity="info", message=f"{what}, {soft}")
    blind = (
        "the correctness check was probably blind to work this kernel skips"
        if measured
        else "the estimate is probably blind to part of this kernel's work, or the correctness check to work it skips"
    )
    # the floor counts the reference's own operators: a rewrite that computes the same outputs with less work (a
    # weight summed before a product whose output is summed) goes under it honestly
    blind += (
        ", unless it reaches the same outputs with less work than the reference's operators do (an algebraic "
        "rewrite, which the speed of light does not foresee)"
    )
    bound = f"its products taken as {_paths_said(sol)}" if sol.bound == "compute" else f"{sol.bound}-bound"
    over = "the speed of light" if sol.floor_ms >= sol.ms else f"the {sol.floor_ms:.3g} ms no timing can beat"
    return AuditFlag(
        code="faster_than_light",
        severity="warn",
        message=(
            f"{what}, {sol.ms / ms:.2f}x faster than this task's speed of light ({sol.ms:.3g} ms on an {sol.gpu}, "
            f"{bound}), which no kernel can be: {blind}; its speedup counts as at most "
            f"{eager_ms / sol.floor_ms:.3g}x (eager's time over {over}) in rewards and rankings"
        ),
    )


def _size(nbytes: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes:.0f} B"


def _kernels(work: ForwardWork) -> set[str]:
    return {step.kernel for step in work.steps if isinstance(step, LaunchWork) and step.configs}


def estimate_for(
    task: Task,
    mode: Mode,
    status: Status,
    reference: TaskWork | None,
    candidate: ForwardWork | None,
    trial_launches: list[str] | None,
    gpu: GpuSpec | None,
    sol: SpeedOfLight | None,
    *,
    calibrations: list[GpuCalibration] | None = None,
) -> tuple[Estimate | None, str]:
    """The estimate of a correct kernel, or None and why there is none; with the efficiencies of the calibration
    fitted for `gpu` among `calibrations` (`adaexplore calibrate`) where there is one, else the package's."""
    if status is not Status.ok:
        return None, ""  # a kernel that is not correct has no speed to claim
    if gpu is None:
        return None, "no estimate: the target GPU is not in the table"
    if reference is None or not reference.forward.complete:
        return None, "no estimate: the reference's forward could not be followed at full size"
    if candidate is None:
        return None, "no estimate: the kernel's forward was not recorded at full size"
    if not candidate.complete:
        return None, f"no estimate: {candidate.note or 'the full-size pass stopped early'}"
    if trial_launches is not None and _kernels(candidate) != set(trial_launches):
        return None, (
            "no estimate: the kernels launched at full size on shape-only tensors are not those the trials launched "
            f"({', '.join(sorted(set(trial_launches))) or 'none'})"
        )
    spec = mode_spec(mode)
    fitted = calibration_for(gpu, calibrations or [])
    cal = fitted.applied() if fitted is not None else CALIBRATION
    tf32 = {"tf32_matmul": spec.allow_tf32_matmul, "tf32_conv": spec.allow_tf32_cudnn}
    mine = estimate_forward(candidate, gpu, calibration=cal, **tf32)
    theirs = estimate_forward(reference.forward, gpu, calibration=cal, **tf32)
    if mine.ms <= 0 or theirs.ms <= 0:
        return None, "no estimate: nothing was recorded to time"
    speedup = theirs.ms / mine.ms
    top = sorted(mine.parts, key=lambda p: p.ms, reverse=True)
    made = first_of([f"{p.step} {p.ms:.3g} ms ({p.limit}: {p.detail})" for p in top], 3, sep="; ")
    by = f" by {fitted.label()}" if fitted is not None else ""
    summary = (
        f"estimated {mine.ms:.3g} ms on an {gpu.name}{by}, not measured ({speedup:.2f}x eager's estimated "
        f"{theirs.ms:.3g} ms): {made}"
    )
    exact = all(c.exact for step in candidate.steps if isinstance(step, LaunchWork) for c in step.configs)
    return (
        Estimate(
            gpu=gpu.name,
            ms=mine.ms,
            reference_ms=theirs.ms,
            speedup=speedup,
            summary=summary,
            parts=[EstimatePart(step=p.step, ms=p.ms, limit=p.limit, detail=p.detail) for p in mine.parts],
            sol_fraction=(sol.ms / mine.ms) if sol is not None else None,
            exact=exact,
            calibration=fitted.label() if fitted is not None else None,
        ),
        "",
    )


def calibration_for(gpu: GpuSpec, calibrations: list[GpuCalibration]) -> GpuCalibration | None:
    """The latest calibration fitted for this GPU model against the package's own efficiencies (one fitted
    against another version's is stale, and not used)."""
    mine = [c for c in calibrations if c.gpu == gpu.name and c.current]
    return max(mine, key=lambda c: (c.created_at, c.id or 0)) if mine else None


def describe_estimate(estimate: Estimate) -> str:
    return estimate.summary


def advice_flags(costs: list[KernelCost]) -> list[AuditFlag]:
    """The assembler's advisories as warnings, one per kernel and advisory, from the largest sizes each kernel was
    compiled at: "kernel _gemm (2 of its 4 configs, full sizes): ptxas C7515: ...; usually fixed by this: ..."."""
    flags = []
    for name in sorted({c.kernel for c in costs}):
        own = [c for c in costs if c.kernel == name and c.skipped is None]
        sizes = "full" if any(c.sizes == "full" for c in own) else "small"
        kept = [c for c in own if c.sizes == sizes]
        for advice in dict.fromkeys(a for c in kept for a in c.advisories):
            having = sum(1 for c in kept if advice in c.advisories)
            which = f"{having} of its {len(kept)} configs, " if len(kept) > 1 else ""
            flags.append(
                AuditFlag(
                    code="ptxas_advisory", severity="warn", message=f"kernel {name} ({which}{sizes} sizes): {advice}"
                )
            )
    return flags


# a kernel whose grid leaves at least this share of the multiprocessors without a program, and which takes at least
# this share of the estimated forward, is named in a warning
IDLE_SMS = 0.5
IDLE_SHARE = 0.2


def idle_sm_flags(candidate: ForwardWork | None, estimate: Estimate | None, gpu: GpuSpec | None) -> list[AuditFlag]:
    """A warning for each kernel whose full-size grid gives most of the target GPU's streaming multiprocessors no
    program while it takes a fair share of the estimated time: a persistent kernel sized from a CPU fallback for the
    SM count, or a fixed grid, runs on a few SMs of the GPU and the rest idle. The estimate already charges for it
    (its waves); the warning says why the kernel is slow and what to look at."""
    if candidate is None or estimate is None or gpu is None or estimate.ms <= 0:
        return []
    spent: dict[str, float] = {}
    for part in estimate.parts:
        spent[part.step] = spent.get(part.step, 0.0) + part.ms
    flags = []
    seen = set()
    for step in candidate.steps:
        if not isinstance(step, LaunchWork) or not step.configs or step.kernel in seen:
            continue
        programs = max(c.programs for c in step.configs)
        share = spent.get(step.kernel, 0.0) / estimate.ms
        if 0 < programs <= gpu.sms * (1 - IDLE_SMS) and share >= IDLE_SHARE:
            seen.add(step.kernel)
            flags.append(
                AuditFlag(
                    code="idle_sms",
                    severity="warn",
                    message=(
                        f"kernel {step.kernel} launches {programs} program{'s' if programs != 1 else ''} at full "
                        f"size, so {gpu.sms - programs} of the {gpu.name}'s {gpu.sms} multiprocessors get no work "
                        f"({share:.0%} of the estimated time): size the grid from the problem, and where it comes "
                        "from the SM count, read it from the GPU the kernel runs on (no fixed number, no CPU "
                        "fallback)"
                    ),
                )
            )
    return flags
