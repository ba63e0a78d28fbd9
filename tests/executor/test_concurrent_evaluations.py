"""Evaluations under way at once on one GPU (`explore --parallel K`, `bench`, concurrent MCP calls): one
evaluation's trouble does not take the others down, and they do not run the device out of memory. Scripted
workers on a fake GPU (tests/executor/scripted.py) drive the evaluator's real stages; one test runs a real judge
process on the CPU."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from adaexplore.domain import ErrorDetail, Evaluation, Mode, Status
from adaexplore.executor import EvaluationOptions, Evaluator, load_task
from adaexplore.executor.host._pool import JudgeClient, JudgeReplaced
from adaexplore.executor.host._spawn import SpawnRequest
from adaexplore.executor.wire._protocol import (
    Compare,
    Compared,
    Failed,
    JobSpec,
    Load,
    Loaded,
    MemoryReport,
    Prepare,
    Prepared,
    Timed,
    TimeReference,
    TrialsDone,
)
from adaexplore.roofline import ForwardWork, TaskWork
from tests.conftest import fast_settings
from tests.executor.scripted import Pause, Script, ScriptedSpawner, Turns, _stats, fake_environment, no_sandbox

DATA = Path(__file__).parent / "data"
TASK = load_task(DATA / "scale_relu_task.py")
KERNEL = (DATA / "scale_relu_kernel.py").read_text()
GIB = 1 << 30

pytestmark = pytest.mark.anyio

OUT_OF_MEMORY = ErrorDetail(type="OutOfMemoryError", message="CUDA out of memory", phase="judge")
TIMED = Timed(stats=_stats(1.0), method="cuda_events", host_bound_calls=0)


def slow_timing(seconds: float) -> Script:
    return {"time": [Pause(seconds), TIMED]}


async def evaluate_at_once(
    tmp_path: Path, spawner: ScriptedSpawner, n: int = 2, *, fresh_reference: bool = False, ahead: bool = True
) -> list[Evaluation]:
    """`n` evaluations of one kernel started together on one fake GPU (`ahead`: with references built ahead)."""
    settings = fast_settings(
        tmp_path,
        warm_workers=0,
        trial_timeout_s=2.0,
        load_timeout_s=5.0,
        device_lock_dir=tmp_path / "locks",
        reference_ahead=ahead,
    )
    results: list[Evaluation] = []
    evaluator = Evaluator(settings, spawner=spawner, environment=fake_environment(1), sandbox=no_sandbox(), cpus={0, 1})
    async with evaluator as ev:

        async def one() -> None:
            results.append(await ev.evaluate(TASK, KERNEL, EvaluationOptions(fresh_reference=fresh_reference)))

        with anyio.fail_after(20):
            async with anyio.create_task_group() as group:
                for _ in range(n):
                    group.start_soon(one)
    return results


def judge_reports(total: int, inputs: int) -> MemoryReport:
    """A judge on a device of `total` bytes whose task moves `inputs` bytes in and out."""
    work = TaskWork(forward=ForwardWork(), input_bytes=inputs, parameter_bytes=0, output_bytes=inputs)
    return MemoryReport(judge="cuda:0", budget_bytes=GIB, cached_bytes=0, entries=0, total_bytes=total, work=work)


# ---- one evaluation's failure, the others' jobs --------------------------------------------------------------


async def test_one_evaluations_out_of_memory_in_the_judge_restarts_no_judge_and_leaves_the_others_be(
    tmp_path: Path,
) -> None:
    # the first reference the judge computes finds the device full (another process's work, say)
    full = Failed(status=Status.infra_error, message="the judge could not share GPU memory", error=OUT_OF_MEMORY)
    spawner = ScriptedSpawner(judges=[{"prepare": Turns(([Pause(0.1), full],))}], candidates=[slow_timing(0.4)] * 3)
    first, second = sorted(await evaluate_at_once(tmp_path, spawner), key=lambda e: e.provenance.attempts)
    assert first.status is Status.ok and second.status is Status.ok, (first.message, second.message)
    # the other evaluation kept its job in the judge: no judge was started again, nothing of its was retried
    assert len(spawner.of("judge")) == 1
    assert first.provenance.attempts == 1
    assert second.provenance.attempts == 2 and "could not share GPU memory" in second.message
    # its retry held the device alone: it waited for the other evaluation to end (its timing takes 0.4 s)
    assert second.phases["wait_memory"] >= 0.2


async def test_a_judge_that_broke_is_restarted_and_the_other_evaluations_jobs_in_it_fail_fast_and_are_retried(
    tmp_path: Path,
) -> None:
    # the first reference timing is answered out of turn: that judge cannot be trusted and is started again
    slow_trials: Script = {
        "proceed": [Pause(0.2), TrialsDone(outputs=[], triton_launches=1, triton_kernels=["k"], trial_s=0.2)]
    }
    spawner = ScriptedSpawner(
        judges=[{"time_reference": Turns(([Compared(results=[])],))}], candidates=[slow_trials] * 4
    )
    results = await evaluate_at_once(tmp_path, spawner, fresh_reference=True)
    assert all(r.status is Status.ok for r in results), [r.message for r in results]
    assert len(spawner.of("judge")) == 2
    broke = [r for r in results if "unexpected compared message from the judge" in r.message]
    lost = [r for r in results if "was replaced since" in r.message]
    assert len(broke) == 1 and len(lost) == 1, [r.message for r in results]
    assert lost[0].provenance.attempts == 2  # its job went with the judge: failed without a request, then reloaded
    for judge in spawner.of("judge"):  # no judge was asked about a job it had not loaded
        loaded = set()
        for command in judge.received:
            if isinstance(command, Load):
                loaded.add(command.job.job_id)
            elif isinstance(command, Prepare | Compare | TimeReference):
                assert command.job_id in loaded, command


# ---- admission by bytes ----------------------------------------------------------------------------------------


async def test_evaluations_that_would_not_fit_side_by_side_wait_for_each_other(tmp_path: Path) -> None:
    # 16 GiB leave 13 for evaluations; this task's evaluation takes about 9
    spawner = ScriptedSpawner(
        judges=[{"memory": [judge_reports(total=16 * GIB, inputs=64 << 20)]}], candidates=[slow_timing(0.4)] * 2
    )
    results = await evaluate_at_once(tmp_path, spawner)
    assert all(r.status is Status.ok for r in results), [r.message for r in results]
    waits = sorted(r.phases["wait_memory"] for r in results)
    assert waits[0] < 0.1 and waits[1] >= 0.3  # the second waited for the first to end


async def test_evaluations_that_fit_side_by_side_do_not_wait_for_memory(tmp_path: Path) -> None:
    spawner = ScriptedSpawner(
        judges=[{"memory": [judge_reports(total=140 * GIB, inputs=64 << 20)]}], candidates=[slow_timing(0.4)] * 2
    )
    results = await evaluate_at_once(tmp_path, spawner)
    assert all(r.status is Status.ok and r.phases["wait_memory"] < 0.1 for r in results)


async def test_a_worker_out_of_memory_in_adaexplores_own_work_is_infra_and_retried_alone(tmp_path: Path) -> None:
    own = Failed(
        status=Status.infra_error,
        message="adaexplore ran out of GPU memory in its own work in the candidate's worker",
        error=ErrorDetail(type="OutOfMemoryError", message="CUDA out of memory", phase="evaluator"),
    )
    spawner = ScriptedSpawner(candidates=[{"proceed": [own]}, slow_timing(0.4), slow_timing(0.4)])
    # (no reference built ahead: the retry would wait for that one, which waits for the device, instead)
    results = await evaluate_at_once(tmp_path, spawner, ahead=False)
    first, second = sorted(results, key=lambda e: e.provenance.attempts)
    assert first.status is Status.ok and second.status is Status.ok, (first.message, second.message)
    assert second.provenance.attempts == 2 and "in its own work" in second.message
    assert second.phases["wait_memory"] >= 0.2  # alone: after the other evaluation ended


# ---- a real judge ----------------------------------------------------------------------------------------------


@pytest.mark.slow
async def test_a_job_loaded_in_a_judge_replaced_since_fails_at_once_and_the_new_judge_lives(tmp_path: Path) -> None:
    # Before: a judge restarted for one evaluation's sake lost the other's job, whose next request killed the new
    # judge (KeyError), and so on through every evaluation under way.
    settings = fast_settings(tmp_path, warm_workers=0, backend="interpret")
    async with Evaluator(settings) as evaluator:
        await evaluator.ready()
        assert evaluator.lanes is not None
        judge = evaluator.lanes.judge(evaluator.lanes.backends()[-1], 0)
        task = str(evaluator.lanes.task_file(TASK))

        def job(job_id: str) -> JobSpec:
            return JobSpec(
                job_id=job_id,
                task_path=task,
                exchange_dir=str(tmp_path),
                sizes="small",
                mode=Mode.kernelbench,
                trials=2,
            )

        with anyio.fail_after(60):
            assert isinstance(await judge.request(Load(job=job("other")), 30), Loaded)
            first = judge.generation
            await judge.restart()  # as a retry of another evaluation did
            with pytest.raises(JudgeReplaced, match="replaced since"):
                await judge.request(Prepare(job_id="other"), 30)
            assert judge.worker is None  # nothing was started for it, nor sent
            # the evaluation's retry loads it again, in a judge that lives on
            assert isinstance(await judge.request(Load(job=job("other")), 30), Loaded)
            assert isinstance(await judge.request(Prepare(job_id="other"), 30), Prepared)
            assert judge.generation == first + 1 and judge.holds("other")
            await judge.release("other")


async def test_a_retired_judge_is_replaced_once_no_evaluations_job_is_in_it(tmp_path: Path) -> None:
    spawner = ScriptedSpawner()
    request = SpawnRequest(role="judge", backend="cuda", device=0, env={}, exchange=tmp_path / "judge")
    judge = JudgeClient(lambda: spawner.spawn(request), ready_timeout=5)

    def job(job_id: str) -> JobSpec:
        return JobSpec(
            job_id=job_id,
            task_path=str(tmp_path / "t.py"),
            exchange_dir=str(tmp_path),
            sizes="full",
            mode=Mode.strict,
            trials=5,
        )

    for job_id in ("mine", "other"):
        await judge.request(Load(job=job(job_id)), 5)
    retired = judge.worker
    assert retired is not None
    await judge.retire(retired)  # for "mine": it held more than its budget when its candidate ran out of memory
    await judge.release("mine")
    assert judge.worker is retired and judge.holds("other")  # the other evaluation keeps its job
    assert isinstance(await judge.request(Prepare(job_id="other"), 5), Prepared)
    await judge.release("other")  # the last job out: the process goes
    assert judge.worker is None and retired.killed
    await judge.request(Load(job=job("next")), 5)
    assert len(spawner.of("judge")) == 2 and judge.generation == 2
    await judge.aclose()
