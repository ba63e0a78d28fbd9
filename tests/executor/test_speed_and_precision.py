"""On a machine without a GPU, a correct kernel's verdict carries its estimated time on the target GPU and the task's
speed of light; a kernel whose dots take rounded or split fp32 operands (tf32 by hand, Triton's tf32x3, bf16
halves) is judged again at the task's full reduction length, where the H200 shows the error of products chained on
one accumulator, and the verdict names the path and the error it measured there."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

from adaexplore.executor import EvaluationOptions, Evaluator, Status, load_task
from adaexplore.roofline import FACTOR_GROUPS, GpuCalibration
from tests.conftest import ON_GPU

DATA = Path(__file__).parent / "data"
TASK = load_task(DATA / "long_linear_task.py")
# KernelBench Level 2 problem 12: a GEMM over in_features = 8192, checked at 17
GEMM_TASK = load_task(DATA / "gemm_leaky_task.py")


def _data_module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, DATA / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


kernels = _data_module("long_linear_kernels")
splits = _data_module("split_gemm_kernels")

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
        checked = [f for f in result.audit.flags if f.code.startswith("precision_")]
        if precision == "ieee":  # fp32 products on the CUDA cores: nothing to check at the full reduction length
            assert not checked
        else:  # Triton's split is checked there too, and passes: its small products are summed apart
            assert [f.code for f in checked] == ["precision_checked"], checked
            assert 'input_precision="tf32x3"' in checked[0].message and "in_features=8192" in checked[0].message
        estimate = result.estimate
        assert estimate is not None and estimate.gpu == "H200" and estimate.ms > 0 and estimate.exact
        assert estimate.reference_ms > 0 and estimate.speedup == pytest.approx(estimate.reference_ms / estimate.ms)
        assert "_linear" in {p.step for p in estimate.parts}
        assert estimate.summary in result.message and "not measured" in estimate.summary
        assert estimate.calibration is None  # the package's efficiencies: no calibration was given
    # the same kernel's estimate with a calibration of the target GPU (`adaexplore calibrate`'s), and of another
    halved = dict.fromkeys(FACTOR_GROUPS, 0.5)
    fitted = [
        GpuCalibration(gpu=gpu, factors=halved, kernels=30, problems=4, held_out="leave one problem out",
                       error_before=0.4, error_after=0.2, created_at="2026-12-07T10:00:00+00:00", id=n)
        for n, gpu in ((1, "H100"), (2, "H200"))
    ]  # fmt: skip
    again = await evaluator.evaluate(TASK, kernels.kernel("ieee", False), EvaluationOptions(calibrations=fitted))
    calibrated = again.estimate
    assert calibrated is not None and estimate is not None
    assert calibrated.calibration == fitted[1].label() and f"by {fitted[1].label()}" in again.message
    # every efficiency halved: every step's time but its launch's doubles (the reference's, a launch's cost at
    # these sizes, barely moves)
    assert 1.5 * estimate.ms < calibrated.ms < 2 * estimate.ms
    assert calibrated.reference_ms > estimate.reference_ms


def _normwise(text: str) -> float:
    found = re.search(r"normwise error ([0-9.e+-]+)", text)
    assert found, text
    return float(found.group(1))


async def test_bf16_halves_chained_on_one_accumulator_fail_at_the_full_reduction_length(evaluator: Evaluator) -> None:
    result = await evaluator.evaluate(GEMM_TASK, splits.kernel(*splits.LOSSY["bf16x3_chained"]))
    assert result.status is Status.mismatch, result.message
    # five trials passed over in_features = 17; over 8192 the tensor cores' accumulation loses the small products
    assert result.correctness is not None and result.correctness.passed
    assert "wrong at the task's full reduction length (in_features=8192)" in result.message
    assert "three bf16 products per multiply-add of the task (its fp32 operands split into bf16 parts)" in (
        result.message
    )
    assert _normwise(result.message) > 4e-5  # twice strict's 2e-5: no sample's spread makes it a pass
    assert result.estimate is None
    assert result.phases["precision"] < 60  # seconds, not the minutes of a whole reduction at a GEMM's batch


async def test_honest_bf16_halves_pass_with_their_error_at_the_full_reduction_length(evaluator: Evaluator) -> None:
    result = await evaluator.evaluate(GEMM_TASK, splits.kernel(*splits.HONEST["bf16x3"]))
    assert result.status is Status.ok, result.message
    flag = next(f for f in result.audit.flags if f.code.startswith("precision_"))
    assert flag.code == "precision_checked" and flag.severity == "info", flag
    assert "three bf16 products per multiply-add of the task" in flag.message and "in_features=8192" in flag.message
    assert 0 < _normwise(flag.message) < 1e-5, flag.message
    assert result.estimate is not None
