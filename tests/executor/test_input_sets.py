"""Tasks with several input sets (INPUT_SETS, as FlashInfer-Bench workloads become): on a GPU each set is judged at
full size as a task of its own, the verdict is the first set that fails, and the speedup is the sets' geometric
mean; on the CPU the set SMALL_SIZES names stands for them. The GPU path runs on the fake device backend
(tests/executor/scripted.py); the CPU path on the real compile and interpret backends."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from adaexplore.domain import Status
from adaexplore.errors import ConfigError, TaskError
from adaexplore.executor import EvaluationOptions, Evaluator, task_from_source
from adaexplore.executor.pipeline._input_sets import set_task
from adaexplore.executor.wire._protocol import Timed
from tests.conftest import fast_settings
from tests.executor.scripted import Die, ScriptedSpawner, _stats, fake_environment, no_sandbox

DATA = Path(__file__).parent / "data"
KERNEL = (DATA / "scale_relu_kernel.py").read_text()
BASE = (DATA / "scale_relu_task.py").read_text()
SETS = """
INPUT_SETS = {"small": {"rows": 2, "cols": 50}, "mid": {"rows": 8, "cols": 300}, "large": {"rows": 64, "cols": 1000}}
TOLERANCE = {"atol": 0.01, "rtol": 0.01}
"""
TASK = task_from_source(BASE + SETS, name="scale_relu_sets")

pytestmark = pytest.mark.anyio


def gpu_evaluator(tmp_path: Path, spawner: ScriptedSpawner) -> Evaluator:
    settings = fast_settings(tmp_path, warm_workers=0, trial_timeout_s=5.0, device_lock_dir=tmp_path / "locks")
    return Evaluator(settings, spawner=spawner, environment=fake_environment(1), sandbox=no_sandbox(), cpus={0, 1})


def timed(ms: float) -> dict:
    return {"time": [Timed(stats=_stats(ms), method="cuda_events", host_bound_calls=0)]}


def test_input_sets_and_a_tolerance_are_read_from_the_module_and_checked() -> None:
    assert list(TASK.input_sets or {}) == ["small", "mid", "large"]
    assert TASK.tolerance == {"atol": 0.01, "rtol": 0.01}
    part = set_task(TASK, "mid")
    assert part.input_sets is None and part.hash != TASK.hash and part.source.endswith("rows = 8\ncols = 300\n")
    with pytest.raises(TaskError, match="INPUT_SETS must map each set's label"):
        task_from_source(BASE + "INPUT_SETS = {'a': {'rows': 'many'}}\n")
    with pytest.raises(TaskError, match="TOLERANCE must be"):
        task_from_source(BASE + "TOLERANCE = {'atol': 0.01}\n")


async def test_on_a_gpu_every_set_is_judged_and_the_speedup_is_their_geometric_mean(tmp_path: Path) -> None:
    # the reference takes 2 ms in every set; the candidate 1, 0.5 and 2 ms: speedups 2, 4 and 1
    spawner = ScriptedSpawner(candidates=[timed(1.0), timed(0.5), timed(2.0)])
    async with gpu_evaluator(tmp_path, spawner) as ev:
        result = await ev.evaluate(TASK, KERNEL, EvaluationOptions(mode="strict"))
    assert result.status is Status.ok
    assert [r.label for r in result.input_sets] == ["small", "mid", "large"]
    assert [r.speedup for r in result.input_sets] == pytest.approx([2.0, 4.0, 1.0])
    assert result.timing is not None and result.timing.speedup == pytest.approx(2.0)  # (2 * 4 * 1) ** (1/3)
    # the times are one pass over all the sets
    assert result.timing.candidate.median_ms == pytest.approx(3.5)
    assert result.timing.reference.median_ms == pytest.approx(6.0)
    assert result.input_sets[1].sizes == {"rows": 8, "cols": 300}
    assert "correct on all 3 input sets" in result.message and "small 2.00x" in result.message
    assert result.provenance.task_hash == TASK.hash
    # each set was its own task in the judge: three tasks loaded, each with the set's sizes at its end
    judge = spawner.of("judge")[0]
    loaded = {m.job.task_path for m in judge.received if getattr(m, "kind", "") == "load"}  # type: ignore[attr-defined]
    assert len(loaded) == 3


async def test_the_first_set_that_fails_is_the_verdict_and_the_rest_are_not_run(tmp_path: Path) -> None:
    spawner = ScriptedSpawner(candidates=[timed(1.0), {"proceed": [Die(signal=signal.SIGSEGV)]}])
    async with gpu_evaluator(tmp_path, spawner) as ev:
        result = await ev.evaluate(TASK, KERNEL, EvaluationOptions(mode="strict"))
    assert result.status is Status.crashed
    assert result.message.startswith("input set mid (rows=8, cols=300) of 3: ")
    assert "the 1 set(s) before it passed, 1 not run" in result.message
    assert [(r.label, r.status) for r in result.input_sets] == [("small", Status.ok), ("mid", Status.crashed)]
    assert result.timing is None and not result.timed
    assert len(spawner.of("candidate")) == 2


async def test_mode_flashinfer_needs_the_tasks_own_tolerance(tmp_path: Path) -> None:
    async with gpu_evaluator(tmp_path, ScriptedSpawner()) as ev:
        with pytest.raises(ConfigError, match="declares none"):
            await ev.evaluate(task_from_source(BASE, name="plain"), KERNEL, EvaluationOptions(mode="flashinfer"))


async def test_on_the_cpu_the_small_set_stands_for_all_of_them(evaluator: Evaluator) -> None:
    task = task_from_source(BASE + SETS, name="scale_relu_sets")
    result = await evaluator.evaluate(task, KERNEL, EvaluationOptions(mode="flashinfer"))
    assert result.status is Status.ok, result.message
    assert result.input_sets == []
    assert "on a GPU each of the task's 3 input sets is judged at full size" in result.message
    assert result.correctness is not None and result.correctness.tolerance.kind == "either"
    assert len(result.correctness.trials) == 3  # the flashinfer protocol's three trials
