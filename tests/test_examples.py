"""Every example kernel gets the verdict its file name promises."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adaexplore.executor import Evaluator, Status, load_task
from tests.conftest import EXAMPLES, fast_settings

EXPECTED = {
    "correct": Status.ok,
    "compile_error": Status.compile_error,
    "wrong_result": Status.mismatch,
    "out_of_bounds": Status.runtime_error,
    "hang": Status.timeout,
}
KERNELS = sorted(EXAMPLES.glob("kernels/*/*.py"))
HANGING = [p for p in KERNELS if p.stem == "hang"]

pytestmark = pytest.mark.anyio


def test_there_are_eight_tasks_each_with_a_correct_and_wrong_kernels() -> None:
    tasks = sorted(p.stem for p in EXAMPLES.glob("tasks/*.py"))
    assert len(tasks) >= 8
    for task in tasks:
        names = {p.stem for p in (EXAMPLES / "kernels" / task).glob("*.py")}
        assert {"correct", "compile_error", "wrong_result"} <= names, task
        assert load_task(EXAMPLES / "tasks" / f"{task}.py").small_sizes, f"{task} has no SMALL_SIZES"
    kinds = {p.stem for p in KERNELS}
    assert kinds == set(EXPECTED)


@pytest.mark.parametrize(
    "kernel",
    [p for p in KERNELS if p not in HANGING],
    ids=[f"{p.parent.name}/{p.stem}" for p in KERNELS if p not in HANGING],
)
async def test_example_kernel_verdict(evaluator: Evaluator, kernel: Path) -> None:
    task = load_task(EXAMPLES / "tasks" / f"{kernel.parent.name}.py")
    result = await evaluator.evaluate(task, kernel.read_text())
    assert result.status is EXPECTED[kernel.stem], result.message


@pytest.fixture(scope="module")
async def short_trials(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Evaluator]:
    # a trial that never ends is stopped at its timeout, which says so after 3 s as well as after the session
    # evaluator's 10 (every one of them spent running the interpreter's loop); no spare: its two evaluations each start
    # the workers they use
    async with Evaluator(fast_settings(tmp_path_factory.mktemp("hang"), trial_timeout_s=3.0, warm_workers=0)) as ev:
        yield ev


@pytest.mark.parametrize("kernel", HANGING, ids=[f"{p.parent.name}/{p.stem}" for p in HANGING])
async def test_example_kernel_that_hangs_times_out(short_trials: Evaluator, kernel: Path) -> None:
    task = load_task(EXAMPLES / "tasks" / f"{kernel.parent.name}.py")
    result = await short_trials.evaluate(task, kernel.read_text())
    assert result.status is EXPECTED[kernel.stem], result.message
    assert "did not finish within 3 s" in result.message, result.message
