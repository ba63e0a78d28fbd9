"""The worker's checks of the ninth round, through the real evaluator: a kernel's source swapped after the
policy read the file, outputs that run code of their own when read (a lazy tuple), a kernel that takes another
code path where the interpreter runs it, and honest kernels that the evaluator's own shims used to fail.

On a machine without a GPU these run on the compile + interpret backends with CPU timing on, as the battery does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adaexplore.executor import Evaluator, Status, load_task
from tests.conftest import ON_GPU, fast_settings

HERE = Path(__file__).parent
CANDIDATES = HERE / "candidates"
SCALE_RELU = load_task(HERE.parent / "executor" / "data" / "scale_relu_task.py")

pytestmark = pytest.mark.anyio


def candidate(name: str) -> str:
    return (CANDIDATES / f"{name}.py").read_text()


@pytest.fixture(scope="module")
async def timed_evaluator(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Evaluator]:
    settings = fast_settings(tmp_path_factory.mktemp("checks"), time_on_cpu=True, min_reps=12, timing_budget_ms=50.0)
    async with Evaluator(settings) as evaluator:
        yield evaluator


@pytest.fixture(scope="module")
async def unguarded_evaluator(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Evaluator]:
    settings = fast_settings(
        tmp_path_factory.mktemp("unguarded"), enforce_policy=False, time_on_cpu=True, min_reps=12, timing_budget_ms=50.0
    )
    async with Evaluator(settings) as evaluator:
        yield evaluator


@pytest.mark.parametrize("guarded", [True, False], ids=["policy", "no_policy"])
async def test_a_lazy_tuple_is_rejected_before_anything_iterates_it(
    timed_evaluator: Evaluator, unguarded_evaluator: Evaluator, guarded: bool
) -> None:
    evaluator = timed_evaluator if guarded else unguarded_evaluator
    result = await evaluator.evaluate(SCALE_RELU, candidate("h21_lazy_tuple"))
    assert result.status is Status.rejected, result.message
    assert "You cannot return a Lazy (a subclass of tuple)" in result.message
    assert result.timing is None


async def test_a_kernel_source_swapped_after_the_check_is_rejected(unguarded_evaluator: Evaluator) -> None:
    result = await unguarded_evaluator.evaluate(SCALE_RELU, candidate("h21_source_swap"))
    assert result.status is Status.rejected, result.message
    assert "You cannot change the source of kernel scale_relu after it was made" in result.message


@pytest.mark.skipif(ON_GPU, reason="on a GPU one backend runs and compiles the kernel: no path goes unchecked")
async def test_the_code_path_the_interpreter_runs_is_compiled_for_sm_90_too(timed_evaluator: Evaluator) -> None:
    result = await timed_evaluator.evaluate(SCALE_RELU, candidate("h21_backend_detect"))
    assert result.status is Status.compile_error, result.message
    assert "kernel scale_relu does not compile for sm_90" in result.message
    assert "INTERPRETED=True" in result.message
    assert "unsupported AST node type: Break" in result.message


@pytest.mark.parametrize("name", ["h21_honest_descriptor", "h21_honest_libdevice"])
async def test_honest_kernels_the_shims_used_to_fail_pass(timed_evaluator: Evaluator, name: str) -> None:
    result = await timed_evaluator.evaluate(SCALE_RELU, candidate(name))
    assert result.status is Status.ok, result.message
    if not ON_GPU:
        assert "compiles for sm_90 at the small sizes (rows=3, cols=77) and the task's full ones" in result.message
        compiled = [f for f in result.audit.flags if f.code == "compiled_for_sm90"]
        said = "every launch the interpreter ran was also compiled for sm_90"
        assert any(f.message.startswith(said) for f in compiled)
