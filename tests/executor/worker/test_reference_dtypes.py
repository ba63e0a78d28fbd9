"""Whole models meet the judge as they are: a float32 state the model holds as a plain attribute is cast with its
parameters for the float64 reference, a dtype fixed in forward makes the reference run in the task's own dtype
(said in a task flag), a third-party package the task imports and this machine lacks is the task's need with the
command that installs it, and a candidate's own size globals shrink with the task's. The judge runs in this
process, on trusted task modules."""

from __future__ import annotations

import textwrap
from pathlib import Path
from types import ModuleType

import pytest
import torch

from adaexplore.domain import Mode
from adaexplore.executor.wire._protocol import JobSpec, Load, Prepare, Prepared, Release
from adaexplore.executor.worker.confine._faults import TaskFault
from adaexplore.executor.worker.judge._judge import Judge
from adaexplore.executor.worker.judge._references import Reference
from adaexplore.executor.worker.task._taskrun import load_task_module, make_args, shrink_globals

TASK = """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.fc = nn.Linear(n, n)
            self.state = torch.randn(batch_size, n)  # a plain attribute: Module.to leaves it alone
            FIXED

        def forward(self, x):
            return self.fc(x) @ STATE  # a matmul takes no mixed dtypes

    batch_size = 4
    n = 16

    def get_inputs():
        return [torch.rand(batch_size, n)]

    def get_init_inputs():
        return [n]
"""


def _task(tmp_path: Path, name: str, fixed: str, state: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(TASK).replace("FIXED", fixed).replace("STATE", state))
    return str(path)


def _prepare(judge: Judge, task_path: str, job_id: str) -> tuple[Prepared, Reference]:
    spec = JobSpec.model_validate(
        {
            "job_id": job_id,
            "task_path": task_path,
            "exchange_dir": str(Path(task_path).parent),
            "sizes": "full",
            "mode": Mode.strict,
            "trials": 2,
            "init_seed": 1,
            "trial_seeds": [11, 12],
            "timing_seed": 9,
        }
    )
    judge.handle(Load(job=spec))
    prepared = judge.handle(Prepare(job_id=job_id))
    assert isinstance(prepared, Prepared), prepared
    reference = judge.jobs[job_id].ref
    judge.handle(Release(job_id=job_id))
    return prepared, reference


def test_float32_state_is_cast_and_a_fixed_dtype_runs_the_reference_in_its_own(tmp_path: Path) -> None:
    judge = Judge(torch.device("cpu"), budget=1 << 30)
    # the state attribute follows the parameters into float64: the reference is the float64 one
    prepared, ref = _prepare(judge, _task(tmp_path, "state", "pass", "self.state.t()"), "state")
    assert ref.float64 and ref.refs[0][0].dtype == torch.float64
    assert not any(f.code == "reference_own_dtype" for f in prepared.task_flags)
    # a tensor made in forward in a fixed dtype cannot meet float64 ones: the reference is PyTorch's own, said so
    eye = "torch.eye(x.shape[1], dtype=torch.float32)"
    prepared, ref = _prepare(judge, _task(tmp_path, "fixed", "pass", eye), "fixed")
    assert not ref.float64 and ref.refs[0][0].dtype == torch.float32
    flags = [f.message for f in prepared.task_flags if f.code == "reference_own_dtype"]
    assert flags and "ran in the task's own dtype" in flags[0] and "RuntimeError" in flags[0]


def test_a_missing_package_is_the_tasks_need_with_its_install_command(tmp_path: Path) -> None:
    path = tmp_path / "needs.py"
    path.write_text("import adaexplore_not_a_package.sub\n")
    with pytest.raises(TaskFault, match=r"the task needs adaexplore_not_a_package, .*pip install adaexplore_not_a"):
        load_task_module(str(path), None, name="needs_task")


def test_a_candidates_own_size_globals_shrink_with_the_tasks() -> None:
    module = ModuleType("candidate")
    module.__dict__.update(batch_size=256, hidden_size=16384, scale=0.5, flag=True, shape=(256, 3))
    shrunk = shrink_globals(module, {"batch_size": 2, "hidden_size": 17, "scale": 0.25, "flag": 1, "absent": 3})
    assert sorted(shrunk) == ["batch_size", "hidden_size", "scale"]
    assert (module.batch_size, module.hidden_size, module.scale) == (2, 17, 0.25)
    assert module.flag is True and module.shape == (256, 3) and not hasattr(module, "absent")


def test_a_forward_that_draws_random_numbers_is_seeded_per_trial_and_named(tmp_path: Path) -> None:
    """KernelBench Level 3 problem 35 draws an LSTM's initial state with torch.randn in forward: the judge seeds
    each trial's forward with the trial's seed (as the candidate's worker does), so the reference is the same on
    every run, runs it in the task's own dtype, and a task flag says the task draws random numbers; a task that
    draws none gets no such flag."""
    judge = Judge(torch.device("cpu"), budget=1 << 30)
    prepared, ref = _prepare(judge, _task(tmp_path, "plain", "pass", "self.state.t()"), "plain")
    assert not any(f.code == "draws_in_forward" for f in prepared.task_flags)
    drawing = _task(tmp_path, "drawing", "pass", "self.state.t() + torch.randn(batch_size, batch_size)")
    prepared, ref = _prepare(judge, drawing, "drawing")
    codes = [f.code for f in prepared.task_flags]
    assert "draws_in_forward" in codes and "ill_posed_task" not in codes, prepared.task_flags
    # a float64 copy of the model would draw other numbers: the reference is the task's own dtype's, said so
    assert not ref.float64 and ref.refs[0][0].dtype == torch.float32
    assert "own dtype" in next(f.message for f in prepared.task_flags if f.code == "draws_in_forward")
    module = load_task_module(drawing, None, name="drawing_task")
    for seed, expected in zip(ref.trial_seeds, ref.refs, strict=True):
        args = make_args(module, "get_inputs", seed, torch.device("cpu"), None)
        torch.manual_seed(seed)  # the trial's seed, right before its forward, as a candidate's worker seeds it
        with torch.no_grad():
            assert torch.equal(ref.native(*args), expected[0])
        with torch.no_grad():  # unseeded, the draw differs
            assert not torch.equal(ref.native(*args), expected[0])
