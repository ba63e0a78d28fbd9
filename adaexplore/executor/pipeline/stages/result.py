"""Stage 5: the verdict's message and the result with its provenance."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import adaexplore
from adaexplore.config import ExecutorConfig
from adaexplore.domain import Backend, ErrorDetail, Evaluation, Provenance, SpeedOfLight, Status
from adaexplore.executor.host._environment import Environment
from adaexplore.executor.host._sandbox import SandboxPlan
from adaexplore.executor.pipeline._render import static_cost_line
from adaexplore.executor.pipeline.stages import speed
from adaexplore.executor.pipeline.stages.context import Run
from adaexplore.executor.tasks._task import code_hash
from adaexplore.roofline import gpu_for_device

__all__ = ["build", "ok_message", "settle_speed"]


def settle_speed(ctx: Run, status: Status, config: ExecutorConfig, environment: Environment | None) -> None:
    """The task's speed of light (with the kernel's fraction of it where a GPU timed it) and, where nothing did,
    a correct kernel's estimated time (see stages/speed.py); a time under the speed of light is flagged."""
    gpu = speed.target_gpu(config, environment, ctx.device)
    ctx.add_flags(speed.advice_flags(ctx.audit.static_cost))
    sol = speed.sol_for(ctx.task, ctx.mode, ctx.task_work, gpu)
    if sol is not None and ctx.timing is not None and status is Status.ok and _timed_on(sol, environment, ctx):
        stat = ctx.timing.statistic
        measured_ms = ctx.timing.candidate.value(stat)
        eager_ms = ctx.timing.reference.value(stat)
        sol = sol.model_copy(
            update={"fraction": sol.ms / max(measured_ms, 1e-9), "reference_fraction": sol.ms / max(eager_ms, 1e-9)}
        )
        flag = speed.faster_than_light(sol, measured_ms, eager_ms, measured=True)
        if flag is not None:
            ctx.audit.flags.append(flag)
    ctx.speed_of_light = sol
    if ctx.timing is None:
        ctx.estimate, ctx.estimate_note = speed.estimate_for(
            ctx.task,
            ctx.mode,
            status,
            ctx.task_work,
            ctx.candidate_work,
            ctx.trial_kernels,
            gpu,
            sol,
            calibrations=ctx.calibrations,
        )
        ctx.add_flags(speed.idle_sm_flags(ctx.candidate_work, ctx.estimate, gpu))
        if sol is not None and ctx.estimate is not None:
            estimate = ctx.estimate
            flag = speed.faster_than_light(sol, estimate.ms, estimate.reference_ms, measured=False)
            if flag is not None:
                ctx.audit.flags.append(flag)


def _timed_on(sol: SpeedOfLight, environment: Environment | None, ctx: Run) -> bool:
    """Whether the speed of light is for the GPU that timed the kernel (a target GPU named in the settings may be
    another: its speed of light says nothing of this GPU's times)."""
    if environment is None or not environment.gpus:
        return False
    timed = gpu_for_device(environment.gpus[ctx.device or 0])
    return timed is not None and timed.name == sol.gpu


def _sizes_used(ctx: Run) -> str:
    """The sizes a job ran at: small where it asked for them and the task has some; else full (a CPU job of a task
    without SMALL_SIZES runs at the task's own sizes, as the worker does)."""
    return "small" if ctx.sizes == "small" and ctx.task.small_sizes else "full"


def ok_message(ctx: Run) -> str:
    parts = []
    if ctx.correctness is not None:
        n = len(ctx.correctness.trials)
        # the sizes the trials ran at: the task's SMALL_SIZES on the CPU backends, its full ones where it has none
        where = (
            "in the interpreter at small sizes"
            if _sizes_used(ctx) == "small"
            else "in the interpreter at the task's full sizes"
        )
        if Backend.cuda in ctx.backends:
            where = "on the GPU" if ctx.device is None else f"on GPU {ctx.device}"
        parts.append(f"correct in {n}/{n} trials {where}")
    # the interpreter compiles each launch it runs for sm_90 too, and says so in a flag
    if Backend.compile in ctx.backends or any(f.code == "compiled_for_sm90" for f in ctx.audit.flags):
        sizes = ctx.task.small_sizes if _sizes_used(ctx) == "small" else None
        listed = ", ".join(f"{k}={v}" for k, v in (sizes or {}).items())
        full = any(c.sizes == "full" for c in ctx.audit.static_cost)
        also = " and the task's full ones" if full else ", not the task's full ones"
        at = f" at the small sizes ({listed}){also}" if listed else " at the task's sizes"
        parts.append("compiles for sm_90" + at + (" (not executed)" if ctx.correctness is None else ""))
    if ctx.audit.static_cost:
        parts.append("static cost " + static_cost_line(ctx.audit.static_cost))
    if ctx.timing is not None:
        t = ctx.timing
        parts.append(
            f"{t.speedup:.2f}x the speed of eager PyTorch ({t.statistic} {t.candidate.value(t.statistic):.4g} ms "
            f"vs {t.reference.value(t.statistic):.4g} ms)"
        )
        if t.speedup_vs_compile is not None:
            parts.append(f"{t.speedup_vs_compile:.2f}x the speed of torch.compile")
        elif t.compile_error is not None:
            parts.append(t.compile_error + " (no speedup vs torch.compile; --fresh-reference tries again)")
    elif Backend.cuda not in ctx.backends:
        parts.append("no GPU timed it here")
        if ctx.estimate is not None:
            parts.append(ctx.estimate.summary)
        elif ctx.estimate_note:
            parts.append(ctx.estimate_note)
    if ctx.speed_of_light is not None and ctx.speed_of_light.fraction is not None:
        sol = ctx.speed_of_light
        parts.append(
            f"{sol.fraction:.0%} of the speed of light ({sol.ms:.3g} ms on this {sol.gpu}, {sol.bound}-bound); "
            f"eager PyTorch reaches {sol.reference_fraction:.0%}"
        )
        # over 100 %: the faster_than_light warning follows with the others, a bound timing can beat its note here
        parts.extend(f.message for f in ctx.audit.flags if f.code == "under_soft_bound")
    warnings = [f.message for f in ctx.audit.flags if f.severity == "warn"]
    if warnings:
        parts.append("warning: " + "; ".join(warnings))
    return "; ".join(parts)


def build(
    ctx: Run,
    status: Status,
    message: str,
    error: ErrorDetail | None,
    *,
    config: ExecutorConfig,
    environment: Environment | None,
    sandbox: SandboxPlan | None,
    attempts: int = 1,
) -> Evaluation:
    versions = ctx.versions
    provenance = Provenance(
        adaexplore=adaexplore.__version__,
        python=versions.get("python") or (environment.python if environment else ""),
        torch=versions.get("torch") or (environment.torch if environment else None),
        triton=versions.get("triton") or (environment.triton if environment else None),
        numpy=versions.get("numpy") or (environment.numpy if environment else None),
        gpu=versions.get("gpu"),
        device=ctx.device,
        driver=versions.get("driver"),
        cuda=versions.get("cuda"),
        compile_target=ctx.compile_target,
        environment=ctx.fingerprint
        or (environment.fingerprint(0 if environment.has_gpu else None) if environment else ""),
        task_hash=ctx.task.hash,
        code_hash=code_hash(ctx.code),
        sizes=_sizes_used(ctx),  # type: ignore[arg-type]
        seeds=ctx.seeds,
        timing_method=ctx.timing.method if ctx.timing else None,
        finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
        sandbox=sandbox.kind if sandbox is not None else "none",
        sandbox_detail=versions.get("sandbox"),
        attempts=attempts,
        tensor_exchange=ctx.exchange or None,
    )
    ctx.phases["total"] = round(time.perf_counter() - ctx.started, 4)
    return Evaluation(
        status=status,
        message=message,
        mode=ctx.mode,
        backends=ctx.backends,
        timed=ctx.timing is not None,
        correctness=ctx.correctness,
        timing=ctx.timing,
        audit=ctx.audit,
        error=error,
        output="\n".join(ctx.output)[-2 * config.output_limit_bytes :],
        phases=ctx.phases,
        provenance=provenance,
        speed_of_light=ctx.speed_of_light,
        estimate=ctx.estimate,
        forward_work=_timed_work(ctx, status),
    )


def _timed_work(ctx: Run, status: Status) -> str | None:
    """What a correct kernel a GPU timed launches at full size, as JSON, where it was recorded to its end (the
    estimate's input for `adaexplore calibrate`)."""
    work = ctx.candidate_work
    if status is not Status.ok or ctx.timing is None or work is None or not work.complete:
        return None
    return work.model_dump_json()
