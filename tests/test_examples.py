"""Every example kernel gets the verdict its file name promises."""

from __future__ import annotations

from pathlib import Path

import pytest

from adaexplore.executor import Evaluator, Status, load_task
from tests.conftest import EXAMPLES

EXPECTED = {
    "correct": Status.ok,
    "compile_error": Status.compile_error,
    "wrong_result": Status.mismatch,
    "out_of_bounds": Status.runtime_error,
    "hang": Status.timeout,
}
KERNELS = sorted(EXAMPLES.glob("kernels/*/*.py"))

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


@pytest.mark.parametrize("kernel", KERNELS, ids=[f"{p.parent.name}/{p.stem}" for p in KERNELS])
async def test_example_kernel_verdict(evaluator: Evaluator, kernel: Path) -> None:
    task = load_task(EXAMPLES / "tasks" / f"{kernel.parent.name}.py")
    result = await evaluator.evaluate(task, kernel.read_text())
    assert result.status is EXPECTED[kernel.stem], result.message
