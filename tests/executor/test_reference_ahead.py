"""References built ahead on fresh seeds: after a strict evaluation the judge builds the task's next reference on
new secret seeds, and the next evaluation takes them; no set of seeds serves two evaluations."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
import torch

from adaexplore.bench._command import replay_settings
from adaexplore.config import ExecutorConfig, Settings
from adaexplore.domain import Backend, Mode, Status
from adaexplore.executor import EvaluationOptions, Evaluator
from adaexplore.executor.pipeline.stages.ahead import wanted
from adaexplore.executor.wire._protocol import JobSpec, Load, Loaded, MemoryQuery, MemoryReport, Prepare, Release
from adaexplore.executor.worker.judge._judge import Judge
from tests.conftest import fast_settings
from tests.executor.test_evaluator import KERNEL, TASK


async def _built_ahead(evaluator: Evaluator) -> None:
    assert evaluator.lanes is not None
    with anyio.fail_after(60):
        while not evaluator.lanes.ahead._ready:
            await anyio.sleep(0.05)


@pytest.mark.anyio
async def test_each_strict_evaluation_after_the_first_takes_fresh_seeds_whose_reference_was_built_ahead(
    tmp_path: Path,
) -> None:
    async with Evaluator(fast_settings(tmp_path, reference_ahead=True, backend="interpret")) as evaluator:
        first = await evaluator.evaluate(TASK, KERNEL)
        assert first.status is Status.ok, first.message
        assert "reference_ahead" not in first.phases
        # right after: the reference still being built is waited for, not built a second time
        second = await evaluator.evaluate(TASK, KERNEL)
        third = await evaluator.evaluate(TASK, KERNEL)
        assert second.status is Status.ok and third.status is Status.ok, (second.message, third.message)
        assert second.phases["reference_ahead"] > 0 and third.phases["reference_ahead"] > 0
        seeds = [e.provenance.seeds for e in (first, second, third)]
        assert all(s is not None for s in seeds)
        assert len({(s.init, tuple(s.trials), s.timing) for s in seeds if s is not None}) == 3
        # the judge holds the next one only: a reference whose seeds were taken is dropped after its evaluation
        await _built_ahead(evaluator)
        (memory,) = await evaluator.judge_memory()
        assert memory["entries"] == 1, memory
        # the protocol's fixed seeds have none built ahead (the judge keeps that reference anyway)
        paper = await evaluator.evaluate(TASK, KERNEL, EvaluationOptions(mode=Mode.paper))
        assert paper.status is Status.ok and "reference_ahead" not in paper.phases


def _job(**update: object) -> JobSpec:
    return JobSpec(job_id="j", task_path="t.py", exchange_dir=".", sizes="small", mode=Mode.strict, trials=5, **update)  # type: ignore[arg-type]


def test_references_are_built_ahead_on_a_gpu_by_default_and_never_for_fixed_seeds() -> None:
    fresh = _job(init_seed=1, trial_seeds=[2, 3, 4, 5, 6], timing_seed=7)
    default = ExecutorConfig()
    assert wanted(default, Backend.cuda, fresh) and not wanted(default, Backend.interpret, fresh)
    assert wanted(ExecutorConfig(reference_ahead=True), Backend.interpret, fresh)
    assert not wanted(ExecutorConfig(reference_ahead=True), Backend.cuda, _job())
    assert not wanted(ExecutorConfig(reference_ahead=False), Backend.cuda, fresh)


def test_a_replay_bench_builds_nothing_ahead_unless_asked(tmp_path: Path) -> None:
    assert replay_settings(Settings(home=tmp_path)).executor.reference_ahead is False
    asked = Settings(home=tmp_path, executor=ExecutorConfig(reference_ahead=True))
    assert replay_settings(asked).executor.reference_ahead is True


def test_the_judge_keeps_a_reference_built_ahead_until_the_evaluation_that_takes_its_seeds_ends(
    tmp_path: Path,
) -> None:
    task = tmp_path / "task.py"
    task.write_text(
        "import torch\n"
        "class Model(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x * 2\n"
        "def get_inputs():\n"
        "    return [torch.randn(64)]\n"
        "def get_init_inputs():\n"
        "    return []\n"
    )
    judge = Judge(torch.device("cpu"), budget=1 << 30)
    seeds = {"init_seed": 11, "trial_seeds": [1, 2], "timing_seed": 3}

    def spec(job_id: str, **more: object) -> JobSpec:
        return JobSpec(
            job_id=job_id,
            task_path=str(task),
            exchange_dir=str(tmp_path),
            sizes="full",
            mode=Mode.strict,
            trials=2,
            **seeds,  # type: ignore[arg-type]
            **more,  # type: ignore[arg-type]
        )

    def entries() -> int:
        report = judge.handle(MemoryQuery())
        assert isinstance(report, MemoryReport)
        return report.entries

    ahead = judge.handle(Load(job=spec("ahead", keep_reference=True)))
    assert isinstance(ahead, Loaded) and not ahead.cached
    judge.handle(Prepare(job_id="ahead"))
    judge.handle(Release(job_id="ahead"))
    assert entries() == 1  # kept for the evaluation to come
    taken = judge.handle(Load(job=spec("taken")))
    assert isinstance(taken, Loaded) and taken.cached
    judge.handle(Prepare(job_id="taken"))
    judge.handle(Release(job_id="taken"))
    assert entries() == 0  # its seeds served their one evaluation


@pytest.mark.anyio
async def test_a_tasks_strict_check_is_its_first_evaluations_reference(tmp_path: Path) -> None:
    # the CPU's default: nothing is built after an evaluation, but the check's reference is not thrown away
    async with Evaluator(fast_settings(tmp_path, backend="interpret")) as evaluator:
        await evaluator.check_task(TASK)
        (memory,) = await evaluator.judge_memory()
        assert memory["entries"] == 1, memory  # the check's reference, on seeds no evaluation has used
        first = await evaluator.evaluate(TASK, KERNEL)
        assert first.status is Status.ok, first.message
        assert first.phases["reference_ahead"] > 0
        (memory,) = await evaluator.judge_memory()
        assert memory["entries"] == 0, memory  # its seeds served their one evaluation
        second = await evaluator.evaluate(TASK, KERNEL)
        assert second.status is Status.ok and "reference_ahead" not in second.phases
        # a check in another mode than its evaluation's keeps nothing that evaluation could take
        await evaluator.check_task(TASK, EvaluationOptions(mode=Mode.paper))
        third = await evaluator.evaluate(TASK, KERNEL)
        assert "reference_ahead" not in third.phases
        # a judge started again since holds nothing: the evaluation takes the seeds and builds their reference
        await evaluator.check_task(TASK)
        assert evaluator.lanes is not None
        await evaluator.lanes.judges["cpu"].restart()
        fourth = await evaluator.evaluate(TASK, KERNEL)
        assert fourth.status is Status.ok and "reference_ahead" not in fourth.phases
