"""The verdict's speed: the task's speed of light on the GPU that timed the kernel (or on the target GPU where
none did), the kernel's fraction of it where it was timed, and an estimate of its time where it was not.

The reference's record comes from the judge, which never imports a candidate. The candidate's comes from its own
worker, so it is used only where it matches what the candidate did in its trials: the same Triton kernels, each
launched as often. A record that does not match, or that stopped early, gives no estimate, and the verdict says
why.
"""

from __future__ import annotations

from adaexplore.config import ExecutorConfig
from adaexplore.domain import Estimate, EstimatePart, Mode, SpeedOfLight, Status
from adaexplore.executor.host._environment import Environment
from adaexplore.executor.tasks._task import Task
from adaexplore.executor.wire._modes import mode_spec, tolerance_for
from adaexplore.roofline import (
    DEFAULT_TARGET,
    GPUS,
    ForwardWork,
    GpuSpec,
    LaunchWork,
    TaskWork,
    estimate_forward,
    fp32_matmul_path,
    gpu_for_device,
    gpu_spec,
    speed_of_light,
)

__all__ = ["describe_estimate", "describe_sol", "estimate_for", "fp32_path", "sol_for", "target_gpu"]


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


def fp32_path(task: Task, mode: Mode) -> str:
    """How fp32 matrix multiplies can go at best under the task's tolerance in `mode` ("tf32" or "tf32x3")."""
    try:
        rtol = tolerance_for(mode, "float32", task.allowed_precision, task.tolerance).rtol
    except ValueError:
        rtol = 0.0
    return fp32_matmul_path(rtol)


def sol_for(task: Task, mode: Mode, work: TaskWork | None, gpu: GpuSpec | None) -> SpeedOfLight | None:
    if work is None or gpu is None:
        return None
    return speed_of_light(work, gpu, fp32_path(task, mode))


def describe_sol(sol: SpeedOfLight, eager_ms: float | None = None) -> str:
    """One sentence: "On an H200 this task cannot run faster than 0.41 ms: it must move 1.9 GB (memory-bound)"."""
    if sol.bound == "memory":
        why = f"it must move {_size(sol.bytes)} (memory-bound)"
    elif sol.bound == "compute":
        unit = "tf32x3 tensor cores, fp32 accuracy" if sol.fp32_matmuls == "tf32x3" else "tf32 tensor cores"
        why = f"it must compute {sol.flops / 1e9:.4g} GFLOP of matrix products (compute-bound, {unit})"
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
) -> tuple[Estimate | None, str]:
    """The estimate of a correct kernel, or None and why there is none."""
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
    mine = estimate_forward(candidate, gpu, tf32_matmul=spec.allow_tf32_matmul, tf32_conv=spec.allow_tf32_cudnn)
    theirs = estimate_forward(
        reference.forward, gpu, tf32_matmul=spec.allow_tf32_matmul, tf32_conv=spec.allow_tf32_cudnn
    )
    if mine.ms <= 0 or theirs.ms <= 0:
        return None, "no estimate: nothing was recorded to time"
    speedup = theirs.ms / mine.ms
    top = sorted(mine.parts, key=lambda p: p.ms, reverse=True)[:3]
    made = "; ".join(f"{p.step} {p.ms:.3g} ms ({p.limit}: {p.detail})" for p in top)
    summary = (
        f"estimated {mine.ms:.3g} ms on an {gpu.name}, not measured ({speedup:.2f}x eager's estimated "
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
        ),
        "",
    )


def describe_estimate(estimate: Estimate) -> str:
    return estimate.summary
