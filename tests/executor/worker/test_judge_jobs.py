"""The judge serving several evaluations at once: a request for a job it does not hold is answered as adaexplore's
failure and the judge goes on serving the others; what it tells the evaluator of its memory (the references it
keeps unused, a task's size), and what marks its own failures as the device's memory running out."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from adaexplore.domain import Mode, Status
from adaexplore.executor.wire._modes import mode_spec
from adaexplore.executor.wire._protocol import (
    Compare,
    Failed,
    JobSpec,
    Load,
    Loaded,
    MemoryQuery,
    MemoryReport,
    Prepare,
    Prepared,
    Release,
    TimeReference,
)
from adaexplore.executor.worker.judge._judge import Judge
from adaexplore.executor.worker.judge._references import ReferenceCache

TASK = """
import torch

class Model(torch.nn.Module):
    def forward(self, x):
        return x * 2

def get_inputs():
    return [torch.randn(4096)]

def get_init_inputs():
    return []
"""


def spec(tmp_path: Path, job_id: str, **more: object) -> JobSpec:
    task = tmp_path / "task.py"
    task.write_text(TASK)
    return JobSpec(
        job_id=job_id,
        task_path=str(task),
        exchange_dir=str(tmp_path),
        sizes="full",
        mode=Mode.kernelbench,
        trials=2,
        **more,  # type: ignore[arg-type]
    )


def test_a_request_for_a_job_the_judge_does_not_hold_is_infra_and_the_judge_serves_on(tmp_path: Path) -> None:
    # a job loaded in a judge process replaced since: the new one must answer, not exit (and lose every job)
    judge = Judge(torch.device("cpu"), budget=1 << 30)
    assert isinstance(judge.handle(Load(job=spec(tmp_path, "held"))), Loaded)
    timing = mode_spec(Mode.strict).timing
    for command in (
        Prepare(job_id="gone"),
        Compare(job_id="gone", outputs=[]),
        TimeReference(job_id="gone", timing=timing, budget_ms=1, min_reps=1, max_reps=1),
    ):
        answer = judge.handle(command)
        assert isinstance(answer, Failed) and answer.status is Status.infra_error, answer
        assert "holds no job 'gone'" in answer.message and "replaced" in answer.message
    assert isinstance(judge.handle(Prepare(job_id="held")), Prepared)  # the job it holds is untouched


def test_the_judge_says_what_it_keeps_unused_after_a_release_and_drops_it_when_asked(tmp_path: Path) -> None:
    judge = Judge(torch.device("cpu"), budget=1 << 30)
    assert isinstance(judge.handle(Load(job=spec(tmp_path, "1"))), Loaded)
    judge.handle(Prepare(job_id="1"))
    released = judge.handle(Release(job_id="1"))
    # the protocol's fixed seeds: the reference is kept for the task's next evaluation, and counted
    assert isinstance(released, MemoryReport) and released.idle_bytes >= 2 * 4 * 4096, released
    asked = judge.handle(MemoryQuery(task_path=str(tmp_path / "task.py"), evict_idle=True))
    assert isinstance(asked, MemoryReport) and asked.idle_bytes == 0 and asked.entries == 0
    # a task's size, from its reference followed on shape-only tensors
    assert asked.work is not None and asked.work.input_bytes == 4 * 4096 and asked.work.output_bytes == 4 * 4096


def test_buffers_of_evaluations_beside_it_do_not_make_a_task_too_large_for_the_judge() -> None:
    cache = ReferenceCache(budget=1 << 20, device=torch.device("cpu"))
    cache.extra = 1 << 30  # shared buffers of other evaluations in progress
    entry = type("Entry", (), {"users": 1, "nbytes": lambda self: 1 << 19})()
    cache.add("k", entry)  # type: ignore[arg-type]
    assert cache.measure("k", entry, "task.py") == 1 << 19  # type: ignore[arg-type]


def test_the_judge_marks_its_own_out_of_memory_so_the_retry_holds_the_device_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    judge = Judge(torch.device("cpu"), budget=1 << 30)
    for job_id in ("beside", "other"):  # another evaluation's job holds memory too: not the task's fault
        assert isinstance(judge.handle(Load(job=spec(tmp_path, job_id))), Loaded)

    def full(job: object, output_sets: int = 0, output_bytes: int = 0) -> None:  # as a GPU's allocation fails
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 8.00 GiB")

    monkeypatch.setattr(judge, "prepare", full)
    answer = judge.handle(Prepare(job_id="other"))
    assert isinstance(answer, Failed) and answer.status is Status.infra_error
    assert answer.error is not None and answer.error.type == "OutOfMemoryError"
