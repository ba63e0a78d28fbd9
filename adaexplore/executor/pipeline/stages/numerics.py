"""Stage 3: the candidate runs its trials on the judge's inputs and the judge compares its outputs with the
reference. On a GPU the evaluation first reserves the device memory it will take (`footprint`), held until its
worker has ended, and the device is held from the reference's outputs to the end of timing (stage 4)."""

from __future__ import annotations

import contextlib
import logging
import os

import anyio

from adaexplore.domain import Backend, Correctness, Seeds, Status
from adaexplore.errors import EvaluatorError, TaskError
from adaexplore.executor.host._pool import JudgeClient
from adaexplore.executor.host._process import WorkerDied
from adaexplore.executor.host._spawn import WorkerChannel
from adaexplore.executor.pipeline.stages import footprint, precision_path, timing
from adaexplore.executor.pipeline.stages.ahead import wanted
from adaexplore.executor.pipeline.stages.context import Pending, Run, Verdict
from adaexplore.executor.pipeline.stages.lane import Lane, Lanes
from adaexplore.executor.pipeline.stages.worker import ask_judge, await_event, candidate
from adaexplore.executor.wire._protocol import (
    Compare,
    Compared,
    Compiled,
    Inputs,
    JobSpec,
    Load,
    Loaded,
    Prepare,
    Prepared,
    Proceed,
    RunCandidate,
    Stop,
    TrialsDone,
)

__all__ = ["run"]

log = logging.getLogger(__name__)


async def run(
    lanes: Lanes, ctx: Run, backend: Backend, *, timed: bool, with_compile: bool, fresh_reference: bool
) -> None:
    """Check (and, `timed`, time) the candidate on the least-loaded device of `backend`: its candidate worker, its
    judge, its reference and its timing all on that one GPU."""
    with lanes.lane_for(backend) as lane:
        ctx.device = lane.device if backend is Backend.cuda else None
        await _run_on(lane, ctx, timed=timed, with_compile=with_compile, fresh_reference=fresh_reference)


async def _run_on(lane: Lane, ctx: Run, *, timed: bool, with_compile: bool, fresh_reference: bool) -> None:
    config, backend, judge, lock = lane.config, lane.backend, lane.judge, lane.lock
    assert judge is not None
    ctx.judge = judge
    async with (
        footprint.admission(lane.memory, judge, ctx, config) as admit,
        candidate(lane, ctx) as (worker, _),
    ):
        assert worker.exchange is not None
        job = lane.make_job(ctx, worker.exchange)
        if backend is Backend.cuda:
            try:  # started now, if it is not yet, to know whether it can share memory
                await judge.start()
            except EvaluatorError as exc:
                raise Verdict(Status.infra_error, str(exc), phase="starting the judge") from exc
        if backend is Backend.cuda and worker.side is not None and judge.worker is not None and judge.worker.side:
            # inputs and outputs stay on the GPU: they never cross host memory
            job = job.model_copy(update={"device_exchange": True})
        # on fresh seeds: those whose reference the judge built ahead (at the task's check, or after the last
        # evaluation), if any
        ahead = await lane.ahead.take(lane.where, job) if job.init_seed is not None else None
        if ahead is not None:
            job = job.model_copy(update=ahead.seeds)
            ctx.ahead_s = ahead.seconds  # a phase once the judge says it still held that reference
        await admit(job)  # before the candidate's model or the judge's reference takes device memory
        ctx.exchange = "device" if job.device_exchange else "files"
        await worker.send(
            RunCandidate(
                job=job,
                candidate_path="candidate.py",
                compile_pass=backend is Backend.cuda,
                shared_memory_limit=config.shared_memory_limit,
                require_triton=ctx.spec.require_triton,
                shared_inputs=job.device_exchange,
            )
        )
        # The judge builds the reference model and inputs while the candidate imports and compiles.
        loading = Pending(ask_judge(judge, Load(job=job), config.load_timeout_s, ctx, object))
        lane.group.start_soon(loading.run)
        try:
            if job.device_exchange:
                # the candidate's worker waits for the judge's inputs before it compiles (on them)
                with ctx.phase("reference_load"):
                    loaded = await loading.result()
                _keep_work(ctx, loaded)
                await _share_inputs(lane, ctx, worker, judge, job, loaded)
            compiled = await await_event(
                config, ctx, worker, timeout=config.load_timeout_s, until=(Compiled,), what="loading and compiling"
            )
            assert isinstance(compiled, Compiled)
            ctx.add_phase("load", compiled.load_s)
            ctx.add_phase("compile", compiled.compile_s)
            ctx.add_flags(compiled.flags)
            ctx.audit.static_cost.extend(compiled.static_cost)
            if compiled.work is not None:
                ctx.candidate_work = compiled.work
            if not job.device_exchange:
                with ctx.phase("reference_load"):
                    _keep_work(ctx, await loading.result())
            if backend is Backend.interpret and not ctx.reduction_check and precision_path.needed(ctx):
                lane.pool.start_one_more()  # the check at the full reduction lengths takes it after the trials
            if (
                timed
                and backend is Backend.cuda
                and not timing.reference_is_cached(lane, ctx, job, with_compile, fresh_reference)
            ):
                await _keep_starts_off_the_measurement(lane, ctx)
            await ctx.report("waiting", "waiting for the device" if lock else "preparing the reference")
            with ctx.phase("wait_device"):
                if lock is not None:
                    await lock.acquire()
            try:
                lane.pin_for_measuring(worker)  # the candidate is measured on the cores kept for measuring
                await _judged(lane, ctx, worker, judge, job, timed=timed)
                if timed:
                    await timing.run(
                        lane, ctx, worker, judge, job, with_compile=with_compile, fresh_reference=fresh_reference
                    )
            finally:
                if lock is not None:
                    lock.release()
        finally:
            with anyio.CancelScope(shield=True), contextlib.suppress(EvaluatorError, Verdict, TaskError):
                await loading.result()
            with anyio.CancelScope(shield=True), contextlib.suppress(EvaluatorError):
                await judge.release(job.job_id)
            if judge.worker is not None and judge.worker.side is not None:
                judge.worker.side.discard(job.job_id)
            if ctx.seeds is not None and wanted(config, backend, job):  # the task's reference works: build the next
                lane.ahead.build_next(
                    lane.where, job, judge=judge, lock=lock, memory=lane.memory, group=lane.group, config=config
                )


def _keep_work(ctx: Run, loaded: object) -> None:
    """What the judge recorded of the reference at full size (see stages/speed.py)."""
    if isinstance(loaded, Loaded):
        ctx.task_work, ctx.task_work_note = loaded.work, loaded.work_note
        ctx.reduction_sizes, ctx.reduction_names = loaded.reduction_sizes, loaded.reduction_names
        if loaded.draw_s:  # a part of reference_load: the inputs' draw of a reference built for this evaluation
            ctx.add_phase("reference_draw", loaded.draw_s)
        if ctx.ahead_s is not None and loaded.cached:
            ctx.add_phase("reference_ahead", ctx.ahead_s)
        if loaded.draw_note:  # slower, not wrong: for whoever runs the evaluator, not for the candidate's author
            log.warning("the judge drew inputs one seed after another: %s", loaded.draw_note)


async def _relay(lane: Lane, worker: WorkerChannel, judge: JudgeClient, job: JobSpec, what: str) -> None:
    """Pass the handle of the judge's buffer of `what` for `job` on to the candidate's worker. The judge's
    failing to send it is adaexplore's fault; the candidate's worker not taking it is not (it ended already:
    its own events, read next, say why)."""
    tag = f"{job.job_id}:{what}"
    source = judge.worker.side if judge.worker is not None and judge.holds(job.job_id) else None
    try:
        if source is None or worker.side is None:
            raise ConnectionError("the judge that loaded this evaluation's job was replaced since")
        fd = await source.take_fd(tag, lane.config.load_timeout_s)
    except (TimeoutError, OSError) as exc:  # ConnectionError is an OSError
        raise Verdict(
            Status.infra_error,
            f"the judge's GPU buffer of the {what} did not reach the evaluator: {exc or type(exc).__name__}",
            phase=f"sharing the {what}",
        ) from exc
    try:
        await worker.side.asend_fd(fd, tag)
    except (TimeoutError, OSError):
        pass
    finally:
        os.close(fd)


async def _share_inputs(
    lane: Lane, ctx: Run, worker: WorkerChannel, judge: JudgeClient, job: JobSpec, loaded: object
) -> None:
    """The candidate's worker copies its inputs from the judge's (or draws them itself when the judge has none
    to share: an argument that is neither a tensor nor a plain value)."""
    shared = loaded.inputs if isinstance(loaded, Loaded) else None
    if shared is not None:
        await _relay(lane, worker, judge, job, "inputs")
    else:
        ctx.exchange = "device outputs, inputs drawn by the candidate's worker"
    with contextlib.suppress(WorkerDied):  # it ended already (import failed, say): its events say why
        await worker.send(Inputs(shared=shared))


async def _keep_starts_off_the_measurement(lane: Lane, ctx: Run) -> None:
    """The reference is timed once and divides every later speedup, so no worker may start on its cores.
    Where the machine keeps starts on cores of their own, nothing waits; elsewhere the spare workers that are
    starting are waited for. The wait is recorded as the `wait_workers` phase either way."""
    with ctx.phase("wait_workers"):
        if not lane.waits_for_spares:
            return
        await ctx.report("waiting", "waiting for starting workers before timing the reference")
        try:
            await lane.wait_warm()
        except EvaluatorError as exc:
            raise Verdict(Status.infra_error, str(exc), phase="waiting for starting workers") from exc


async def _judged(
    lane: Lane, ctx: Run, worker: WorkerChannel, judge: JudgeClient, job: JobSpec, *, timed: bool
) -> None:
    """The reference's outputs, the candidate's trials and their comparison; stops the worker unless timed."""
    config = lane.config
    await ctx.report("reference", "computing reference outputs")
    with ctx.phase("reference"):
        sets = max(job.trials, config.recheck_reps) if job.device_exchange else 0
        prepare = Prepare(job_id=job.job_id, output_sets=sets, output_bytes=config.recheck_bytes)
        prepared = await ask_judge(judge, prepare, config.trial_timeout_s * (job.trials + 3), ctx, Prepared)
    assert isinstance(prepared, Prepared)
    ctx.seeds = Seeds(
        init=prepared.init_seed,
        trials=prepared.trial_seeds,
        timing=prepared.timing_seed,
        generator="cuda" if job.generate_on_device else "cpu",
    )
    ctx.add_flags(prepared.task_flags)
    judge_ready = judge.ready
    if judge_ready is not None and not ctx.versions.get("gpu"):
        ctx.versions.update({k: v for k, v in judge_ready.versions.items() if v and not ctx.versions.get(k)})
    if prepared.outputs is not None:
        await _relay(lane, worker, judge, job, "outputs")
    await worker.send(
        Proceed(
            allow_input_mutation=prepared.reference_mutates_inputs,
            allow_aliasing=prepared.reference_aliases_inputs,
            max_output_elements=prepared.output_elements,
            outputs=prepared.outputs,
        )
    )
    with ctx.phase("trials"):
        done = await await_event(
            config,
            ctx,
            worker,
            timeout=ctx.trial_timeout_s or config.trial_timeout_s,
            until=(TrialsDone,),
            what="trial 1",
        )
    assert isinstance(done, TrialsDone)
    ctx.add_flags(done.flags)
    ctx.audit.triton_launches = done.triton_launches
    ctx.audit.triton_kernels = sorted(set(ctx.audit.triton_kernels) | set(done.triton_kernels))
    ctx.trial_kernels = list(done.triton_kernels)
    await ctx.report("judging", "comparing outputs with the reference")
    with ctx.phase("judge"):
        compared = await ask_judge(
            judge, Compare(job_id=job.job_id, outputs=done.outputs), config.trial_timeout_s * job.trials, ctx, Compared
        )
    assert isinstance(compared, Compared)
    ctx.correctness = Correctness(
        passed=all(r.passed for r in compared.results), trials=compared.results, tolerance=prepared.tolerances[0]
    )
    if not ctx.correctness.passed:
        failed = next(r for r in compared.results if not r.passed)
        await worker.send(Stop())
        raise Verdict(
            Status.mismatch,
            f"wrong result in trial {failed.index + 1} of {len(compared.results)}: {failed.message}",
        )
    if not timed:
        await worker.send(Stop())
