"""The stages of one evaluation attempt, in order: the static checks, then for each backend planned the sm_90
compile (without a GPU) or the numerics with timing, and on the interpreter the full-path and precision
probes; then the speed is settled. A verdict ends the attempt where it is raised."""

from __future__ import annotations

from typing import Any

from adaexplore.domain import Backend, Status
from adaexplore.executor.host._environment import Environment
from adaexplore.executor.pipeline.stages import compile as compile_stage
from adaexplore.executor.pipeline.stages import coverage, full_path, numerics, precision, result, static
from adaexplore.executor.pipeline.stages.context import Run, Verdict
from adaexplore.executor.pipeline.stages.lane import Lanes

__all__ = ["run"]


async def run(
    lanes: Lanes,
    run: Run,
    backend: str | None,
    environment: Environment,
    *,
    with_compile: bool,
    fresh_reference: bool,
) -> tuple[Status, str, Any]:
    """The verdict's status, message and error detail of one attempt (`run.fault` set where it is ours).

    Raises:
        TaskError: the task's own code failed.
        ConfigError: `backend` needs what this machine lacks.
    """
    config = lanes.config
    try:
        await run.report("queued", "checking the source")
        with run.phase("static"):
            static.run(run, config)
        backends = lanes.backends() if backend in (None, "auto") else lanes.explicit(backend)
        run.planned = backends
        for chosen in backends:
            run.backends.append(chosen)
            if chosen is Backend.compile:
                await compile_stage.run(lanes, run)
            else:
                timed = chosen is Backend.cuda or config.time_on_cpu
                await numerics.run(
                    lanes, run, chosen, timed=timed, with_compile=with_compile, fresh_reference=fresh_reference
                )
                if chosen is Backend.interpret:
                    coverage.check(run)
                    await full_path.run(lanes, run)
                    await precision.run(lanes, run)
        result.settle_speed(run, Status.ok, config, environment)
        return Status.ok, result.ok_message(run), None
    except Verdict as verdict:
        if verdict.status is Status.infra_error:
            run.fault = verdict
        else:
            result.settle_speed(run, verdict.status, config, environment)
        return verdict.status, verdict.message, verdict.error
