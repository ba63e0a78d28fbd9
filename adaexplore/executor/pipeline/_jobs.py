"""The job a worker is given for one evaluation attempt: the task's file, its exchange directory, the sizes and
the protocol's parameters, and the seeds where the mode draws fresh ones."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from adaexplore.config import ExecutorConfig
from adaexplore.domain import Backend
from adaexplore.executor.pipeline.stages.ahead import fresh_seeds
from adaexplore.executor.pipeline.stages.context import Run
from adaexplore.executor.wire._protocol import JobSpec

__all__ = ["job"]


def job(run: Run, backend: Backend, exchange: Path, task_path: Path, config: ExecutorConfig) -> JobSpec:
    """The job of `run` for a worker whose directory is `exchange` (seeds drawn here where the mode draws them)."""
    small = backend is not Backend.cuda
    run.sizes = "small" if small else "full"
    spec = run.spec
    seeds: dict[str, Any] = {}
    if spec.fresh_seeds:
        seeds = fresh_seeds(spec.trials)
    return JobSpec(
        job_id=secrets.token_hex(8),
        task_path=str(task_path),
        exchange_dir=str(exchange),
        sizes=run.sizes,  # type: ignore[arg-type]
        small_sizes=run.task.small_sizes if small else None,
        mode=run.mode,
        trials=spec.trials,
        cast_floats_to=spec.cast_floats_to,
        allow_tf32_matmul=spec.allow_tf32_matmul,
        allow_tf32_cudnn=spec.allow_tf32_cudnn,
        allowed_precision=run.task.allowed_precision,
        task_tolerance=run.task.tolerance,
        generate_on_device=spec.generate_on_device and backend is Backend.cuda,
        enforce_policy=config.policy_on,
        runtime_guard=not config.disable_guards_for_tests,
        one_config=run.one_config,
        reduction_check=run.reduction_check,
        **seeds,
    )
