"""Stage 4: the reference's timing (measured once per task, environment, GPU and protocol by the judge, then read
from the cache that every later evaluation of the task divides by), then the candidate's, the outputs of timed
calls chosen as they returned checked again, and the speedup."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from adaexplore.domain import DRAWS_IN_FORWARD, AuditFlag, Stats, Status, Timing
from adaexplore.executor.host._pool import JudgeClient
from adaexplore.executor.host._spawn import WorkerChannel
from adaexplore.executor.pipeline.stages.context import Run, Verdict
from adaexplore.executor.pipeline.stages.lane import Lane
from adaexplore.executor.pipeline.stages.worker import ask_judge, await_event
from adaexplore.executor.wire._protocol import (
    Compare,
    Compared,
    JobSpec,
    ReferenceTimed,
    TimeCandidate,
    Timed,
    TimeReference,
)

__all__ = ["reference_is_cached", "reference_path", "reference_timings", "run"]

# Below this share of a forward's GPU time in the candidate's Triton kernels, the result carries a warning.
LOW_TRITON_SHARE = 0.05


async def run(
    lane: Lane,
    ctx: Run,
    worker: WorkerChannel,
    judge: JudgeClient,
    job: JobSpec,
    *,
    with_compile: bool,
    fresh_reference: bool,
) -> None:
    cfg, timing = lane.config, ctx.spec.timing
    assert ctx.correctness is not None
    # The reference first, while the candidate's process waits idle, rather than after the candidate's
    # timing, when that process is exiting (and tearing its CUDA context down) beside the measurement.
    with ctx.phase("reference_timing"):
        reference, compiled, cached, compile_error = await reference_timings(
            lane, ctx, judge, job, with_compile=with_compile, fresh=fresh_reference
        )
    await worker.send(
        TimeCandidate(
            timing=timing,
            budget_ms=cfg.timing_budget_ms,
            min_reps=cfg.min_reps,
            max_reps=cfg.max_reps,
            # a task that draws random numbers in forward: its timed calls, not seeded, cannot match the reference
            recheck_calls=0 if any(f.code == DRAWS_IN_FORWARD for f in ctx.audit.flags) else cfg.recheck_reps,
            recheck_bytes=cfg.recheck_bytes,
            recheck_sample=cfg.recheck_sample,
        )
    )
    with ctx.phase("timing"):
        timed = await await_event(cfg, ctx, worker, timeout=cfg.timing_timeout_s, until=(Timed,), what="timing")
    assert isinstance(timed, Timed)
    ctx.add_flags(timed.flags)
    ctx.audit.triton_time_share = share = timed.triton_time_share
    if share is not None and share < LOW_TRITON_SHARE:
        ctx.add_flags(
            [
                AuditFlag(
                    code="little_triton_time",
                    severity="warn",
                    message=f"only {share:.1%} of a forward's GPU time is spent in the candidate's Triton "
                    "kernels: PyTorch does nearly all of the work, and the speedup is not the kernels'",
                )
            ]
        )
    if timed.rechecks:
        with ctx.phase("judge"):
            rechecked = await ask_judge(
                judge,
                Compare(job_id=job.job_id, outputs=timed.rechecks, patterns=timed.recheck_patterns),
                cfg.trial_timeout_s * len(timed.rechecks),
                ctx,
                Compared,
            )
        assert isinstance(rechecked, Compared)
        ctx.correctness.rechecks = rechecked.results
        bad = next((k for k, r in enumerate(rechecked.results) if not r.passed), None)
        if bad is not None:
            ctx.correctness.passed = False
            raise Verdict(
                Status.mismatch,
                f"the output of a timed call{_which_call(timed, bad)} is wrong although the trials passed: "
                f"{rechecked.results[bad].message}. Results must not be cached or reused across calls; every "
                "call must compute its output from its own inputs",
            )
    statistic = timing.statistic
    ctx.fingerprint = lane.fingerprint
    speedup = reference.value(statistic) / max(timed.stats.value(statistic), 1e-9)
    ctx.timing = Timing(
        method=timed.method,
        statistic=statistic,
        candidate=timed.stats,
        reference=reference,
        speedup=speedup,
        reference_compile=compiled,
        speedup_vs_compile=(compiled.value(statistic) / max(timed.stats.value(statistic), 1e-9) if compiled else None),
        reference_cached=cached,
        compile_error=compile_error,
        host_bound_calls=timed.host_bound_calls,
        unseen_ms=timed.unseen_ms,
    )
    if timed.host_bound_calls > timed.stats.n // 2:
        ctx.add_flags(
            [
                AuditFlag(
                    code="host_time_exceeds_device_time",
                    severity="warn",
                    message="the device stayed busy after the CUDA events on the current stream had "
                    "finished (work on other streams that the current one never waits for); that time, "
                    f"{timed.unseen_ms:.3f} ms, was added to every timed call",
                )
            ]
        )


def _which_call(timed: Timed, recheck: int) -> str:
    """Which timed call the `recheck`-th recheck checked, as a verdict names it after "a timed call"."""
    if recheck < len(timed.recheck_calls) and timed.timed_calls:
        return f" (call {timed.recheck_calls[recheck]} of the {timed.timed_calls} timed, counted from 0)"
    return ""


# The reference's timing, cached


def reference_path(lane: Lane, ctx: Run, job: JobSpec) -> Path:
    """Where the reference timing of this task, environment, GPU and protocol is cached."""
    cfg, timing = lane.config, ctx.spec.timing
    key_text = json.dumps(
        {
            "task": ctx.task.hash,
            "env": lane.fingerprint,
            # the GPU itself, not only its model: a speedup is only ever against a reference timed on its own GPU
            "device": lane.physical_gpu,
            "sizes": job.sizes,
            "mode": ctx.mode.value,
            "timing": timing.model_dump(),
            "budget": cfg.timing_budget_ms,
            "reps": [cfg.min_reps, cfg.max_reps],
            "cast": job.cast_floats_to,
            "tf32": [job.allow_tf32_matmul, job.allow_tf32_cudnn],
        },
        sort_keys=True,
    )
    key = hashlib.sha256(key_text.encode()).hexdigest()[:24]
    return lane.cache_dir / "reference-timing" / f"{key}.json"


def _cached(where: Path, *, with_compile: bool, fresh: bool) -> dict[str, Any] | None:
    """The cached reference timing if it holds what is asked for, else None."""
    found: dict[str, Any] = json.loads(where.read_text()) if where.exists() and not fresh else {}
    compile_known = "compile" in found or "compile_error" in found
    return found if "eager" in found and (not with_compile or compile_known) else None


def reference_is_cached(lane: Lane, ctx: Run, job: JobSpec, with_compile: bool, fresh: bool) -> bool:
    return _cached(reference_path(lane, ctx, job), with_compile=with_compile, fresh=fresh) is not None


async def reference_timings(
    lane: Lane, ctx: Run, judge: JudgeClient, job: JobSpec, *, with_compile: bool, fresh: bool
) -> tuple[Stats, Stats | None, bool, str | None]:
    """The reference's eager timing, its torch.compile timing (if asked for), whether they were cached, and
    why torch.compile could not be timed (cached too: compiling again would fail again; `fresh` retries)."""
    cfg, timing = lane.config, ctx.spec.timing
    where = reference_path(lane, ctx, job)
    found = _cached(where, with_compile=with_compile, fresh=fresh)
    if found is not None:
        compiled = Stats.model_validate(found["compile"]) if with_compile and "compile" in found else None
        failure = found.get("compile_error") if with_compile and compiled is None else None
        return Stats.model_validate(found["eager"]), compiled, True, failure
    await ctx.report(
        "reference_timing", "timing the PyTorch reference" + (" and torch.compile" if with_compile else "")
    )
    answer = await ask_judge(
        judge,
        TimeReference(
            job_id=job.job_id,
            timing=timing,
            budget_ms=cfg.timing_budget_ms,
            min_reps=cfg.min_reps,
            max_reps=cfg.max_reps,
            with_compile=with_compile,
        ),
        cfg.timing_timeout_s + (cfg.load_timeout_s * 3 if with_compile else 0),
        ctx,
        ReferenceTimed,
    )
    assert isinstance(answer, ReferenceTimed)
    stored = json.loads(where.read_text()) if where.exists() and not fresh else {}
    stored["eager"] = answer.stats.model_dump()
    if answer.compile_stats is not None:
        stored["compile"] = answer.compile_stats.model_dump()
        stored.pop("compile_error", None)
    elif answer.compile_error is not None:
        stored["compile_error"] = answer.compile_error
        stored.pop("compile", None)
    where.parent.mkdir(parents=True, exist_ok=True)
    temporary = where.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps(stored))
    temporary.replace(where)
    return answer.stats, answer.compile_stats, False, answer.compile_error
