"""The reference's timing: measured once per task, environment and protocol by the judge, then read from the
cache that every later evaluation of the task divides by."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from adaexplore.domain import Stats
from adaexplore.executor.host._pool import JudgeClient
from adaexplore.executor.pipeline.stages.context import Run
from adaexplore.executor.pipeline.stages.lane import Lane
from adaexplore.executor.pipeline.stages.worker import ask_judge
from adaexplore.executor.wire._protocol import JobSpec, ReferenceTimed, TimeReference

__all__ = ["cached", "is_cached", "path", "timings"]


def path(lane: Lane, ctx: Run, job: JobSpec) -> Path:
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


def cached(where: Path, *, with_compile: bool, fresh: bool) -> dict[str, Any] | None:
    """The cached reference timing if it holds what is asked for, else None."""
    found: dict[str, Any] = json.loads(where.read_text()) if where.exists() and not fresh else {}
    compile_known = "compile" in found or "compile_error" in found
    return found if "eager" in found and (not with_compile or compile_known) else None


def is_cached(lane: Lane, ctx: Run, job: JobSpec, with_compile: bool, fresh: bool) -> bool:
    return cached(path(lane, ctx, job), with_compile=with_compile, fresh=fresh) is not None


async def timings(
    lane: Lane, ctx: Run, judge: JudgeClient, job: JobSpec, *, with_compile: bool, fresh: bool
) -> tuple[Stats, Stats | None, bool, str | None]:
    """The reference's eager timing, its torch.compile timing (if asked for), whether they were cached, and
    why torch.compile could not be timed (cached too: compiling again would fail again; `fresh` retries)."""
    cfg, timing = lane.config, ctx.spec.timing
    where = path(lane, ctx, job)
    found = cached(where, with_compile=with_compile, fresh=fresh)
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
