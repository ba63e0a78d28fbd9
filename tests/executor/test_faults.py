"""Whose fault a failure is, and the one retry of adaexplore's own failures, through scripted workers: the
evaluator's real stages talking to in-process workers that fail on cue (tests/executor/scripted.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from adaexplore.domain import ErrorDetail, Evaluation
from adaexplore.errors import TaskError
from adaexplore.executor import EvaluationOptions, Evaluator, Status, load_task
from adaexplore.executor.host._pool import CorePlan, default_warm_workers, plan_cores
from adaexplore.executor.host._process import WorkerProcess
from adaexplore.executor.host._spawn import WorkerChannel
from adaexplore.executor.host._watch import OutputCapture, pin_process_tree
from adaexplore.executor.wire._protocol import Compared, Failed, MemoryQuery, MemoryReport, TaskFailed
from tests.conftest import fast_settings
from tests.executor.scripted import Die, Hang, ScriptedSpawner, fake_environment, no_sandbox

DATA = Path(__file__).parent / "data"
TASK = load_task(DATA / "scale_relu_task.py")
KERNEL = (DATA / "scale_relu_kernel.py").read_text()

pytestmark = pytest.mark.anyio


async def evaluate(
    tmp_path: Path,
    spawner: ScriptedSpawner,
    *,
    cpus: set[int] | None = None,
    warm_workers: int = 0,
    gpus: int = 1,
    times: int = 1,
) -> tuple[Evaluation, Evaluator]:
    settings = fast_settings(
        tmp_path,
        warm_workers=warm_workers,
        trial_timeout_s=0.05,
        timing_timeout_s=0.2,
        load_timeout_s=5.0,
        device_lock_dir=tmp_path / "locks",
    )
    async with Evaluator(
        settings,
        spawner=spawner,
        environment=fake_environment(gpus),
        sandbox=no_sandbox(),
        cpus=cpus or {0, 1},
    ) as evaluator:
        with anyio.fail_after(10):
            for _ in range(times):  # a fresh reference each time: every evaluation times it
                result = await evaluator.evaluate(TASK, KERNEL, EvaluationOptions(fresh_reference=times > 1))
    return result, evaluator


async def test_a_worker_the_out_of_memory_killer_killed_is_infra_and_retried_once_on_a_fresh_worker(tmp_path) -> None:
    spawner = ScriptedSpawner(candidates=[{"time": [Die(signal=signal.SIGKILL, oom_killed=True)]}])
    result, _ = await evaluate(tmp_path, spawner)
    assert result.status is Status.ok, result.message
    assert result.provenance.attempts == 2
    assert "retried once on a fresh worker" in result.message
    assert "SIGKILL during timing" in result.message and "out-of-memory killer killed it" in result.message
    assert len(spawner.of("candidate")) == 2
    assert result.timing is not None  # the second attempt's measurement is the result


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
@pytest.mark.parametrize("oom", [False, None], ids=["no-oom-kill-counted", "no-count-kept"])
async def test_a_signal_the_evaluator_did_not_send_is_the_candidates_crash(tmp_path, sig, oom) -> None:
    # the candidate's own code may send its process any signal (a broken kernel would have itself retried, and
    # then filed as adaexplore's fault); only the out-of-memory killer's count says it came from outside
    spawner = ScriptedSpawner(candidates=[{"time": [Die(signal=sig, oom_killed=oom)]}])
    result, _ = await evaluate(tmp_path, spawner)
    assert result.status is Status.crashed, result.message
    assert f"killed by {signal.Signals(sig).name} during timing, a signal adaexplore did not send" in result.message
    witness = "no out-of-memory kill was counted" if oom is False else "keeps no count of out-of-memory kills"
    assert witness in result.message
    assert result.provenance.attempts == 1 and len(spawner.of("candidate")) == 1


@pytest.mark.parametrize("sig", [signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGABRT])
async def test_a_worker_killed_by_its_own_fault_is_the_candidates_crash_and_not_retried(tmp_path, sig) -> None:
    spawner = ScriptedSpawner(candidates=[{"proceed": [Die(signal=sig)]}])
    result, _ = await evaluate(tmp_path, spawner)
    assert result.status is Status.crashed, result.message
    assert signal.Signals(sig).name in result.message
    assert result.provenance.attempts == 1 and len(spawner.of("candidate")) == 1


async def test_a_sigkill_the_evaluator_sent_itself_is_not_infra(tmp_path) -> None:
    spawner = ScriptedSpawner(candidates=[{"proceed": [Die(signal=signal.SIGKILL, by_evaluator=True)]}])
    result, _ = await evaluate(tmp_path, spawner)
    assert result.status is Status.crashed, result.message
    assert "SIGKILL" in result.message and result.provenance.attempts == 1


async def test_a_hung_candidate_stays_a_timeout(tmp_path) -> None:
    spawner = ScriptedSpawner(candidates=[{"proceed": [Hang()]}])
    result, _ = await evaluate(tmp_path, spawner)
    assert result.status is Status.timeout, result.message
    assert "did not finish within" in result.message
    assert result.provenance.attempts == 1 and len(spawner.of("candidate")) == 1
    assert spawner.of("candidate")[0].killed  # killed by the evaluator, and that is no infra error


async def test_two_infra_errors_in_a_row_report_the_second_as_adaexplores_fault(tmp_path) -> None:
    spawner = ScriptedSpawner(
        candidates=[
            {"time": [Die(signal=signal.SIGKILL, oom_killed=True)]},
            {"proceed": [Die(signal.SIGTERM, oom_killed=True)]},
        ]
    )
    result, _ = await evaluate(tmp_path, spawner)
    assert result.status is Status.infra_error
    assert result.provenance.attempts == 2
    message = result.message
    assert "adaexplore failed twice in a row" in message and "not the kernel's" in message
    assert "report it to adaexplore's maintainers" in message
    # the phase and the error of each attempt
    assert "SIGTERM during trial 1" in message and "SIGKILL during timing" in message


async def test_a_judge_that_dies_mid_request_is_restarted_and_the_evaluation_retried(tmp_path) -> None:
    spawner = ScriptedSpawner(judges=[{"compare": [Die(signal=signal.SIGKILL, output="judge went away")]}])
    result, _ = await evaluate(tmp_path, spawner)
    assert result.status is Status.ok, result.message
    assert result.provenance.attempts == 2
    assert "the judge process died" in result.message and "judge went away" in result.message
    assert len(spawner.of("judge")) == 2


async def test_a_judge_that_stops_answering_is_infra_and_retried(tmp_path) -> None:
    spawner = ScriptedSpawner(judges=[{"prepare": [Hang()]}])
    result, _ = await evaluate(tmp_path, spawner)
    assert result.status is Status.ok, result.message
    assert result.provenance.attempts == 2 and "the judge process timed out" in result.message
    assert len(spawner.of("judge")) == 2


async def test_an_unexpected_message_from_the_judge_restarts_it_before_the_retry(tmp_path) -> None:
    spawner = ScriptedSpawner(judges=[{"time_reference": [Compared(results=[])]}])
    result, _ = await evaluate(tmp_path, spawner)
    assert result.status is Status.ok, result.message
    assert "unexpected compared message from the judge" in result.message
    first_judge = spawner.of("judge")[0]
    assert first_judge.killed and len(spawner.of("judge")) == 2


async def test_an_unexpected_protocol_message_from_the_worker_is_infra_and_retried(tmp_path) -> None:
    spawner = ScriptedSpawner(candidates=[{"proceed": [Compared(results=[])]}])
    result, _ = await evaluate(tmp_path, spawner)
    assert result.status is Status.ok, result.message
    assert result.provenance.attempts == 2
    assert "unexpected compared message from the worker during trial 1" in result.message


async def test_a_worker_reporting_infra_error_is_retried(tmp_path) -> None:
    spawner = ScriptedSpawner(
        candidates=[{"proceed": [Failed(status=Status.infra_error, message="could not map the judge's buffer")]}]
    )
    result, _ = await evaluate(tmp_path, spawner)
    assert result.status is Status.ok, result.message
    assert result.provenance.attempts == 2 and "could not map the judge's buffer" in result.message


OOM = Failed(
    status=Status.runtime_error,
    message="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    error=ErrorDetail(type="torch.OutOfMemoryError", message="CUDA out of memory", phase="trial"),
)


def memory(cached: int, budget: int = 4 << 30) -> MemoryReport:
    return MemoryReport(judge="cuda:0", budget_bytes=budget, cached_bytes=cached, entries=3)


def _asks_memory(command: object) -> bool:
    """A question about what the judge holds (not the one every evaluation on a GPU asks first: its task's size)."""
    return isinstance(command, MemoryQuery) and command.task_path is None


async def test_out_of_memory_while_the_judge_holds_more_than_its_budget_is_infra(tmp_path) -> None:
    spawner = ScriptedSpawner(candidates=[{"proceed": [OOM]}], judges=[{"memory": [memory(cached=6 << 30)]}])
    result, _ = await evaluate(tmp_path, spawner)
    assert result.status is Status.ok, result.message
    assert result.provenance.attempts == 2
    assert "judge held 6.00 GiB, past its budget of 4.00 GiB" in result.message
    assert len(spawner.of("judge")) == 2  # restarted, which frees what it held


async def test_out_of_memory_with_the_judge_within_budget_is_the_candidates(tmp_path) -> None:
    spawner = ScriptedSpawner(candidates=[{"proceed": [OOM]}], judges=[{"memory": [memory(cached=1 << 30)]}])
    result, _ = await evaluate(tmp_path, spawner)
    assert result.status is Status.runtime_error, result.message
    assert "CUDA out of memory" in result.message and result.provenance.attempts == 1
    assert any(_asks_memory(c) for c in spawner.of("judge")[0].received)


async def test_a_candidate_exception_stays_the_candidates(tmp_path) -> None:
    boom = Failed(status=Status.runtime_error, message="ValueError: boom")
    spawner = ScriptedSpawner(candidates=[{"proceed": [boom]}])
    result, _ = await evaluate(tmp_path, spawner)
    assert result.status is Status.runtime_error and result.message == "ValueError: boom"
    assert result.provenance.attempts == 1
    # an exception that is not an out-of-memory never asks the judge about its memory
    assert not any(_asks_memory(c) for c in spawner.of("judge")[0].received)


async def test_a_task_error_is_raised_and_never_retried(tmp_path) -> None:
    spawner = ScriptedSpawner(judges=[{"load": [TaskFailed(message="get_inputs() raised RuntimeError: no data")]}])
    settings = fast_settings(tmp_path, warm_workers=0, device_lock_dir=tmp_path / "locks")
    async with Evaluator(settings, spawner=spawner, environment=fake_environment(), sandbox=no_sandbox()) as ev:
        with pytest.raises(TaskError, match="no data"):
            await ev.evaluate(TASK, KERNEL)
    assert len(spawner.of("candidate")) == 1


async def test_judge_memory_reports_each_started_judge(tmp_path) -> None:
    spawner = ScriptedSpawner(judges=[{"memory": [memory(cached=5 << 20)]}, {"memory": [memory(cached=7 << 20)]}])
    settings = fast_settings(tmp_path, warm_workers=0, device_lock_dir=tmp_path / "locks")
    async with Evaluator(settings, spawner=spawner, environment=fake_environment(2), sandbox=no_sandbox()) as ev:
        assert await ev.judge_memory() == []  # no judge has started yet
        await ev.wait_warm()
        reports = await ev.judge_memory()
    assert sorted(r["cached_bytes"] for r in reports) == [5 << 20, 7 << 20]
    assert all(r["budget_bytes"] == 4 << 30 for r in reports)


# ---- where workers start, and whether a measurement waits for them -------------------------------------


def test_pool_size_comes_from_the_cores_and_gpus() -> None:
    assert default_warm_workers(2, 0) == 1
    assert default_warm_workers(16, 1) == 4
    assert default_warm_workers(16, 0) == 4
    assert default_warm_workers(32, 8) == 1
    assert default_warm_workers(64, 2) == 4
    assert default_warm_workers(24, 2) == 3


def test_cores_are_split_only_where_the_machine_has_enough() -> None:
    assert not plan_cores(set(range(4)), gpus=1).separate
    assert not plan_cores(set(range(7)), gpus=1).separate
    assert not plan_cores(set(range(16)), gpus=0).separate  # nothing is timed on a GPU
    assert not plan_cores(set(range(16)), gpus=8).separate  # 16 for measuring would leave none to start on
    plan = plan_cores(set(range(8)), gpus=1)
    assert plan.separate and plan.measure == {0: frozenset({6, 7})} and plan.spare == frozenset(range(6))
    two = plan_cores(set(range(16)), gpus=2)
    assert two.measure == {0: frozenset({14, 15}), 1: frozenset({12, 13})}
    assert two.spare == frozenset(range(12))
    assert CorePlan().for_spare() is None and CorePlan().for_judge(0) is None


async def test_on_a_large_machine_starts_run_apart_and_the_reference_does_not_wait(tmp_path) -> None:
    # A worker takes 0.3 s to become ready. The first evaluation's replacement spare is still starting when
    # the second times its reference; on 16 cores the second does not wait for it.
    spawner = ScriptedSpawner(ready_delay=0.3)
    result, evaluator = await evaluate(tmp_path, spawner, cpus=set(range(16)), warm_workers=2, times=2)
    assert result.status is Status.ok, result.message
    assert evaluator.cores.separate
    assert "wait_workers" in result.phases and result.phases["wait_workers"] < 0.1
    measure, spare = frozenset({14, 15}), frozenset(range(14))
    assert [w.cpus for w in spawner.of("judge")] == [measure]
    assert all(w.cpus == spare for w in spawner.of("candidate"))
    # the candidate that was timed was moved onto the measuring cores once it held the device
    assert [(w.role, cpus) for w, cpus in spawner.pins] == [("candidate", measure)] * 2


async def test_on_a_small_machine_the_reference_waits_for_starting_workers(tmp_path) -> None:
    spawner = ScriptedSpawner(ready_delay=0.3)
    result, evaluator = await evaluate(tmp_path, spawner, cpus={0, 1, 2, 3}, warm_workers=2, times=2)
    assert result.status is Status.ok, result.message
    assert not evaluator.cores.separate
    # the first evaluation's replacement spare started as it ended; the second waited for that start
    assert result.phases["wait_workers"] >= 0.15
    assert spawner.pins == [] and all(w.cpus is None for w in spawner.started)


def test_the_worker_process_is_a_worker_channel() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:

        class Proc:  # what WorkerProcess reads of anyio's process at construction
            pid = child.pid
            stdout = None
            returncode = None

        worker = WorkerProcess(Proc(), "candidate", "cuda", OutputCapture(256))  # type: ignore[arg-type]
        assert isinstance(worker, WorkerChannel)
        assert not worker.killed and worker.violation is None
    finally:
        child.kill()
        child.wait()


def test_pinning_moves_every_thread_of_a_worker_and_its_children() -> None:
    code = "import subprocess, sys, threading, time; threading.Thread(target=time.sleep, args=(30,)).start(); "
    code += "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); print('up', flush=True); "
    code += "time.sleep(30)"
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert parent.stdout is not None and parent.stdout.readline().strip() == b"up"
        core = frozenset({sorted(os.sched_getaffinity(0))[-1]})
        pin_process_tree(parent.pid, core)
        tids = [int(t.name) for t in Path(f"/proc/{parent.pid}/task").iterdir()]
        children = [int(c) for tid in tids for c in Path(f"/proc/{parent.pid}/task/{tid}/children").read_text().split()]
        assert len(tids) >= 2 and len(children) == 1
        for tid in tids + children:
            assert os.sched_getaffinity(tid) == core
    finally:
        os.killpg(parent.pid, signal.SIGKILL)
        parent.wait()


# ---- the device exchange (GPU memory shared between the judge and the candidate's worker) ----------------


async def test_a_candidate_that_ends_before_it_takes_the_shared_inputs_keeps_its_own_verdict(tmp_path) -> None:
    # It failed at import and exited while the evaluator passed it the judge's inputs: the handle and the
    # command find it gone, and its own message, already sent, is the verdict.
    refused = Failed(status=Status.rejected, message="You cannot change global settings: torch.backends")
    spawner = ScriptedSpawner(candidates=[{"run": [refused, Die(code=0)]}], sides=True)
    result, _ = await evaluate(tmp_path, spawner)
    assert result.status is Status.rejected, result.message
    assert "You cannot change global settings" in result.message
    assert result.provenance.attempts == 1
    assert result.provenance.tensor_exchange == "device"


async def test_a_healthy_candidate_takes_the_device_path_and_its_handle(tmp_path) -> None:
    spawner = ScriptedSpawner(sides=True)
    result, _ = await evaluate(tmp_path, spawner)
    assert result.status is Status.ok, result.message
    assert result.provenance.tensor_exchange == "device"
    candidate = spawner.of("candidate")[0]
    assert candidate.peer is not None
    # the judge's handle reached the candidate's end of its socket, under the job's tag
    fd = candidate.peer.receive_fd(f"{candidate.received[0].job.job_id}:inputs")
    os.close(fd)
    assert [type(m).__name__ for m in candidate.received][:2] == ["RunCandidate", "Inputs"]
