"""The judge's inputs drawn side by side in forked processes: the same values bit for bit as one draw after
another, the task's own errors as they were, and no process left behind."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import torch

from adaexplore.executor import Mode
from adaexplore.executor.wire._protocol import JobSpec, Load, Loaded, Prepare, Prepared, Release, TaskFailed
from adaexplore.executor.worker.judge._draws import DrawReport, draw_side_by_side
from adaexplore.executor.worker.judge._judge import Judge
from adaexplore.executor.worker.task._taskrun import draw_args, load_task_module, make_args

KERNELBENCH = Path(__file__).resolve().parents[4] / "shared" / "data" / "kernelbench"

# a draw slow enough to be handed to processes (time.sleep stands for seconds of random numbers), of values of
# several kinds: a transposed view (its strides must come back), an integer tensor, a float and a tuple
SLOW = """
import time
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)

    def forward(self, x, idx, scale, pair):
        return self.lin(x) * scale + idx.float().mean() + pair[0].sum()

def get_inputs():
    time.sleep(0.3)
    {extra}
    return [torch.randn(32, 16).t(), torch.randint(0, 9, (5,)), 0.5, (torch.rand(3), 2)]

def get_init_inputs():
    {init}
    return [32]
"""


def _task(tmp_path: Path, extra: str = "pass", init: str = "pass") -> str:
    path = tmp_path / "slow.py"
    path.write_text(SLOW.format(extra=extra, init=init))
    return str(path)


@pytest.fixture
def forked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The processes this test forks (through os.fork, as the judge's draws do)."""
    pids: list[int] = []
    fork = os.fork

    def recording() -> int:
        pid = fork()
        if pid:
            pids.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", recording)
    return pids


def _running(pids: list[int]) -> list[int]:
    """Those of `pids` that still exist (a zombie not yet waited for among them)."""
    return [pid for pid in pids if Path(f"/proc/{pid}").exists()]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.stride() == b.stride() and torch.equal(a, b)
    if isinstance(a, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if callable(a):
        return callable(b)
    return bool(a == b)


def _side_by_side(module: Any, seeds: list[int]) -> tuple[list[list[Any]], DrawReport]:
    report = DrawReport()
    first = draw_args(module, "get_inputs", seeds[0])
    # the first draw "took" a second: the rest go to processes whatever their real cost
    drawing = draw_side_by_side(module, first, 1.0, seeds[1:], report)
    assert drawing is not None, "one core, or too little memory, for drawing side by side"
    got: list[list[Any]] = [first, *([[]] * (len(seeds) - 1))]
    for index, values in drawing.collect():
        got[index + 1] = values
    return got, report


def test_inputs_drawn_side_by_side_are_the_serial_draws_bit_for_bit(tmp_path: Path, forked: list[int]) -> None:
    module = load_task_module(_task(tmp_path), None)
    seeds = [3, 1_000_003, 42, 2**31 + 5, 77]
    got, report = _side_by_side(module, seeds)
    assert report.in_processes == len(seeds) - 1 and report.processes >= 2
    assert _same(got, [draw_args(module, "get_inputs", seed) for seed in seeds])
    assert forked and _running(forked) == []


def test_a_seed_whose_draw_fails_raises_the_tasks_own_error(tmp_path: Path, forked: list[int]) -> None:
    # the task fails on one seed's values: a child cannot tell the judge why, so the judge draws it again
    module = load_task_module(_task(tmp_path, extra="assert torch.rand(1).item() > 0.05, 'unlucky seed'"), None)
    unlucky = next(s for s in range(100) if (torch.manual_seed(s), torch.rand(1).item())[1] <= 0.05)
    lucky = [s for s in range(100) if s != unlucky][:3]
    report = DrawReport()
    drawing = draw_side_by_side(module, draw_args(module, "get_inputs", lucky[0]), 1.0, [*lucky[1:], unlucky], report)
    assert drawing is not None
    with pytest.raises(Exception, match="get_inputs\\(\\) raised AssertionError: unlucky seed"):
        list(drawing.collect())
    assert report.in_processes == 2
    assert forked and _running(forked) == []


def test_values_a_child_cannot_pass_back_are_drawn_by_the_judge(tmp_path: Path) -> None:
    path = tmp_path / "odd.py"
    path.write_text(
        "import torch\nModel = torch.nn.Identity\n"
        "def get_inputs():\n    return [torch.rand(4), lambda x: x]\n"
        "def get_init_inputs():\n    return []\n"
    )
    module = load_task_module(str(path), None)
    got, report = _side_by_side(module, [5, 6, 7])
    assert report.in_processes == 0
    assert _same(got, [draw_args(module, "get_inputs", seed) for seed in (5, 6, 7)])


def test_a_quick_draw_stays_in_the_judge(tmp_path: Path) -> None:
    module = load_task_module(_task(tmp_path), None)
    first = draw_args(module, "get_inputs", 1)
    assert draw_side_by_side(module, first, 0.01, [2, 3], DrawReport()) is None


def _spec(task: str, job_id: str) -> JobSpec:
    return JobSpec(
        job_id=job_id,
        task_path=task,
        exchange_dir=str(Path(task).parent),
        sizes="full",
        mode=Mode.kernelbench,
        trials=4,
    )


def test_the_judge_draws_a_slow_tasks_trials_side_by_side_with_the_same_reference(
    tmp_path: Path, forked: list[int]
) -> None:
    task = _task(tmp_path)
    judge = Judge(torch.device("cpu"), budget=1 << 30)
    loaded = judge.handle(Load(job=_spec(task, "1")))
    assert isinstance(loaded, Loaded), loaded
    ref = judge.jobs["1"].ref
    trials = len(ref.trial_seeds)
    # the trials after the first, and the first's copy for the task's facts, each in a process
    assert loaded.drawn_in_processes == trials and loaded.draw_s > 0
    cpu = torch.device("cpu")
    assert _same(ref.inputs, [make_args(ref.module, "get_inputs", s, cpu, None) for s in ref.trial_seeds])
    assert list(ref.drawn) == [ref.trial_seeds[0]] and _same(ref.drawn[ref.trial_seeds[0]], [ref.inputs[0]])
    prepared = judge.handle(Prepare(job_id="1"))
    assert isinstance(prepared, Prepared), prepared
    assert ref.drawn == {}  # the facts took their copy
    judge.handle(Release(job_id="1"))
    assert forked and _running(forked) == []


def test_a_model_that_fails_while_its_inputs_are_drawn_leaves_no_process(tmp_path: Path, forked: list[int]) -> None:
    task = _task(tmp_path, init="raise ValueError('no model today')")
    judge = Judge(torch.device("cpu"), budget=1 << 30)
    failed = judge.handle(Load(job=_spec(task, "1")))
    assert isinstance(failed, TaskFailed) and "no model today" in failed.message, failed
    assert forked and _running(forked) == []


@pytest.mark.skipif(not KERNELBENCH.is_dir(), reason="the KernelBench problems (shared/data/kernelbench) are absent")
@pytest.mark.parametrize(
    "problem",
    [
        "level1/1_Square_matrix_multiplication_.py",
        "level2/12_Gemm_Multiply_LeakyReLU.py",
        "level3/1_MLP.py",
    ],
)
def test_kernelbench_inputs_drawn_side_by_side_are_the_serial_draws(problem: str) -> None:
    path = KERNELBENCH / problem
    module = load_task_module(str(path), None)
    seeds = [11, 12, 13]
    got, report = _side_by_side(module, seeds)
    assert report.in_processes == 2
    assert _same(got, [draw_args(module, "get_inputs", seed) for seed in seeds])


def test_where_no_process_can_be_started_the_judge_draws_every_seed_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = load_task_module(_task(tmp_path), None)

    def refused(name: str, flags: int = 0) -> int:
        raise PermissionError(1, "Operation not permitted", name)

    monkeypatch.setattr(os, "memfd_create", refused)
    got, report = _side_by_side(module, [4, 5, 6])
    assert report.in_processes == 0 and "the judge drew the rest itself" in report.note
    assert _same(got, [draw_args(module, "get_inputs", seed) for seed in (4, 5, 6)])


def test_a_kept_reference_whose_inputs_were_dropped_draws_them_again_side_by_side(
    tmp_path: Path, forked: list[int]
) -> None:
    # on a GPU, a job that shares its inputs finds them dropped by an earlier job that did not (a task's check
    # before its evaluation, say): the judge draws them again, the same values
    task = _task(tmp_path)
    judge = Judge(torch.device("cpu"), budget=1 << 30)
    assert isinstance(judge.handle(Load(job=_spec(task, "1"))), Loaded)
    ref = judge.jobs["1"].ref
    before = ref.inputs
    ref.inputs = []
    judge.builder.redraw(ref, judge.jobs["1"].spec)
    assert _same(ref.inputs, before) and ref.timing_base is not None
    assert judge.builder.last_draw.in_processes >= 1
    assert _same(ref.timing_base, draw_args(ref.module, "get_inputs", ref.timing_seed))
    assert _running(forked) == []
