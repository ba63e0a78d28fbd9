"""Stage 2 (machines without a GPU): the real Triton compiler builds every kernel for sm_90, unexecuted, and follows
the forward at the task's full sizes (what it launches, and whether it writes every element of its outputs)."""

from __future__ import annotations

from adaexplore.domain import Backend
from adaexplore.executor.pipeline.stages import coverage
from adaexplore.executor.pipeline.stages.context import Run
from adaexplore.executor.pipeline.stages.lane import Lanes
from adaexplore.executor.pipeline.stages.worker import await_event, candidate
from adaexplore.executor.wire._protocol import Compiled, Done, RunCandidate

__all__ = ["run"]

COMPILE_TARGET = "cuda:90"


async def run(lanes: Lanes, ctx: Run) -> None:
    ctx.compile_target = COMPILE_TARGET
    await ctx.report("compiling", "compiling every kernel for sm_90")
    lane = lanes.lane(Backend.compile, 0)
    async with candidate(lane, ctx) as (worker, _):
        assert worker.exchange is not None
        job = lane.make_job(ctx, worker.exchange)
        with ctx.phase("compile_check"):
            await worker.send(
                RunCandidate(
                    job=job,
                    candidate_path="candidate.py",
                    shared_memory_limit=lane.config.shared_memory_limit,
                    require_triton=ctx.spec.require_triton,
                )
            )
            # charged to the candidate's budget like its trials: its own code's time, not the compiler's (budget.py)
            compiled = await await_event(
                lane.config,
                ctx,
                worker,
                timeout=lane.config.load_timeout_s,
                until=(Compiled,),
                what="loading and compiling for sm_90",
            )
            assert isinstance(compiled, Compiled)
            await await_event(lane.config, ctx, worker, timeout=30, until=(Done,), what="finishing the compile check")
    ctx.add_flags(compiled.flags)
    ctx.audit.shared_memory.update(compiled.shared_memory)
    ctx.audit.static_cost.extend(compiled.static_cost)
    ctx.audit.triton_kernels = sorted(set(ctx.audit.triton_kernels) | set(compiled.kernels))
    ctx.add_phase("compile", compiled.compile_s)
    if compiled.work is not None:
        ctx.candidate_work = compiled.work
    ctx.coverage = compiled.coverage
    if Backend.interpret not in ctx.planned:
        coverage.check(ctx)  # else after the trials: a rule they find broken outweighs a gap
