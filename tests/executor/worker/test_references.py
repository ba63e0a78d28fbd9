"""The judge's reference cache: kept per task and seeds, evicted least recently used, bounded in bytes."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from adaexplore.executor import Mode, Status
from adaexplore.executor.wire._protocol import (
    Failed,
    JobSpec,
    Load,
    Loaded,
    MemoryQuery,
    MemoryReport,
    Prepare,
    Prepared,
    Release,
    TaskFailed,
)
from adaexplore.executor.worker.judge._judge import Judge
from adaexplore.executor.worker.judge._references import ReferenceCache, reference_key

TASK = """
import pytest
import torch
import torch.nn as nn

N = {n}

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(N))

    def forward(self, x):
        return x * self.w

def get_inputs():
    return [torch.randn(N)]

def get_init_inputs():
    return []
"""


def _task(tmp_path: Path, name: str, n: int) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(TASK.format(n=n))
    return str(path)


def _spec(task_path: str, job_id: str, **seeds: object) -> JobSpec:
    return JobSpec(
        job_id=job_id,
        task_path=task_path,
        exchange_dir=str(Path(task_path).parent),
        sizes="full",
        mode=Mode.kernelbench,  # the reference in float32: every tensor below is 4 bytes an element
        trials=2,
        **seeds,  # type: ignore[arg-type]
    )


def _evaluate(judge: Judge, spec: JobSpec) -> tuple[Loaded, Prepared]:
    loaded = judge.handle(Load(job=spec))
    prepared = judge.handle(Prepare(job_id=spec.job_id))
    assert isinstance(loaded, Loaded) and isinstance(prepared, Prepared), (loaded, prepared)
    judge.handle(Release(job_id=spec.job_id))
    return loaded, prepared


def _report(judge: Judge) -> MemoryReport:
    report = judge.handle(MemoryQuery())
    assert isinstance(report, MemoryReport)
    return report


# one task of 2**16 floats: weights and 2 trials of inputs and outputs, 5 tensors of 256 KiB each
ENTRY = 5 * 4 * 2**16


def test_a_second_evaluation_of_a_task_reuses_its_reference(tmp_path: Path) -> None:
    judge = Judge(torch.device("cpu"), budget=10 * ENTRY)
    task = _task(tmp_path, "a", 2**16)
    first, _ = _evaluate(judge, _spec(task, "1"))
    second, _ = _evaluate(judge, _spec(task, "2"))
    assert (first.cached, second.cached) == (False, True)
    report = _report(judge)
    assert report.entries == 1
    # a CPU judge sharing nothing keeps the weights and the reference outputs, not the inputs
    assert report.cached_bytes == 3 * 4 * 2**16


def test_fresh_seeds_are_not_kept_after_their_evaluation(tmp_path: Path) -> None:
    judge = Judge(torch.device("cpu"), budget=10 * ENTRY)
    task = _task(tmp_path, "a", 2**16)
    loaded, _ = _evaluate(judge, _spec(task, "1", init_seed=7, trial_seeds=[1, 2], timing_seed=3))
    assert not loaded.cached
    assert _report(judge).entries == 0


def test_the_least_recently_used_reference_is_evicted_to_stay_within_the_budget(tmp_path: Path) -> None:
    judge = Judge(torch.device("cpu"), budget=2 * 3 * 4 * 2**16)  # room for two references
    a, b, c = (_task(tmp_path, name, 2**16) for name in "abc")
    _evaluate(judge, _spec(a, "1"))
    _evaluate(judge, _spec(b, "2"))
    _evaluate(judge, _spec(a, "3"))  # a is now the most recent
    _evaluate(judge, _spec(c, "4"))  # evicts b
    assert _report(judge).entries == 2
    assert _evaluate(judge, _spec(a, "5"))[0].cached
    assert not _evaluate(judge, _spec(b, "6"))[0].cached
    assert _report(judge).cached_bytes <= judge.cache.budget


def test_a_task_larger_than_the_budget_is_refused_with_its_sizes(tmp_path: Path) -> None:
    judge = Judge(torch.device("cpu"), budget=2**20)
    task = _task(tmp_path, "big", 2**20)  # 4 MiB per tensor
    assert isinstance(judge.handle(Load(job=_spec(task, "1"))), Loaded)
    refused = judge.handle(Prepare(job_id="1"))
    assert isinstance(refused, TaskFailed)
    assert "needs 0.01 GiB" in refused.message and "may hold 0.00 GiB" in refused.message
    assert "judge_memory" in refused.message
    judge.handle(Release(job_id="1"))
    assert _report(judge).entries == 0 and _report(judge).cached_bytes == 0


def test_references_in_use_are_never_evicted() -> None:
    cache = ReferenceCache(budget=0, device=torch.device("cpu"))
    entry = type("Entry", (), {"users": 1})()
    cache.add("busy", entry)  # type: ignore[arg-type]
    cache.make_room(10)
    assert len(cache) == 1


def test_the_key_tells_apart_what_changes_the_reference(tmp_path: Path) -> None:
    task = _task(tmp_path, "a", 8)
    base = _spec(task, "1")
    assert reference_key(base) == reference_key(_spec(task, "2"))  # the job's own id does not matter
    for change in ({"init_seed": 1}, {"cast_floats_to": "float16"}, {"allow_tf32_matmul": True}, {"sizes": "small"}):
        assert reference_key(base.model_copy(update=change)) != reference_key(base), change


def _device_runs_out(judge: Judge, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fault injection: the judge's own allocations for the next reference fail as a GPU's do when the device is
    full (a CPU raises no OutOfMemoryError of its own)."""

    def build(spec: JobSpec) -> None:
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 124.00 GiB")

    monkeypatch.setattr(judge.builder, "build", build)


def test_a_task_that_runs_the_device_out_of_memory_alone_is_the_tasks_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    judge = Judge(torch.device("cpu"), budget=10 * ENTRY)
    _device_runs_out(judge, monkeypatch)
    answer = judge.handle(Load(job=_spec(_task(tmp_path, "big", 2**10), "1")))
    assert isinstance(answer, TaskFailed), answer
    assert "does not fit" in answer.message and "make the task smaller" in answer.message
    assert "124.00 GiB" in answer.message


def test_running_out_of_memory_beside_another_tasks_work_is_not_the_tasks_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # another job holds memory: the device may be short for reasons of ours, so the fault is not the task's
    judge = Judge(torch.device("cpu"), budget=10 * ENTRY)
    assert isinstance(judge.handle(Load(job=_spec(_task(tmp_path, "a", 2**10), "other"))), Loaded)
    _device_runs_out(judge, monkeypatch)
    answer = judge.handle(Load(job=_spec(_task(tmp_path, "big", 2**10), "1")))
    assert isinstance(answer, Failed) and answer.status is Status.infra_error, answer
