"""On a machine without a GPU, a correct kernel's verdict carries its estimated time on the target GPU and the task's
speed of light; a kernel whose tf32 products are chained by hand is judged again at the task's full reduction
length, where the H200 shows their error."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from adaexplore.executor import Evaluator, Status, load_task
from tests.conftest import ON_GPU

DATA = Path(__file__).parent / "data"
TASK = load_task(DATA / "long_linear_task.py")
_spec = importlib.util.spec_from_file_location("long_linear_kernels", DATA / "long_linear_kernels.py")
assert _spec is not None and _spec.loader is not None
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(ON_GPU, reason="checks the path of machines without a GPU")]


async def test_hand_chained_tf32_products_fail_at_the_full_reduction_length(evaluator: Evaluator) -> None:
    result = await evaluator.evaluate(TASK, kernels.kernel("tf32", True))
    assert result.status is Status.mismatch, result.message
    # the five trials passed at in_features = 32; the reduction the task runs is 8192 long
    assert "correct at the small sizes, but wrong at the task's full reduction length (in_features=8192)" in (
        result.message
    )
    assert 'input_precision="tf32x3"' in result.message
    assert result.estimate is None  # a kernel that is not correct has no speed to claim
    assert result.speed_of_light is not None and result.speed_of_light.flops == 2 * 4 * 8192 * 16
    assert "precision" in result.phases


async def test_tritons_own_split_and_fp32_products_pass_and_are_estimated(evaluator: Evaluator) -> None:
    for precision in ("tf32x3", "ieee"):
        result = await evaluator.evaluate(TASK, kernels.kernel(precision, False))
        assert result.status is Status.ok, (precision, result.message)
        # no plain tf32 products: nothing to check at the full reduction length
        assert not any(f.code.startswith("precision_") for f in result.audit.flags)
        estimate = result.estimate
        assert estimate is not None and estimate.gpu == "H200" and estimate.ms > 0 and estimate.exact
        assert estimate.reference_ms > 0 and estimate.speedup == pytest.approx(estimate.reference_ms / estimate.ms)
        assert "_linear" in {p.step for p in estimate.parts}
        assert estimate.summary in result.message and "not measured" in estimate.summary
