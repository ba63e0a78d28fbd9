"""The speed of light takes each dtype's products by the fastest path whose error the task's tolerance admits
(bf16x3 for fp32 accuracy, one fp16 product where TF32's error passes ...), and fp16 and bf16 dots are
tensor-core work wherever a kernel takes them (the IR files are real sm_90 compiles, `data/make_ttir.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from adaexplore.domain import Tolerance
from adaexplore.roofline import (
    GPUS,
    PATHS,
    ForwardWork,
    LaunchConfig,
    LaunchWork,
    OpWork,
    TaskWork,
    count_launch,
    estimate_forward,
    matmul_path,
    normwise_budget,
    parse_ttir,
    speed_of_light,
)

H200 = GPUS["H200"]
DATA = Path(__file__).parent / "data"
FLOPS = 2 * 1024 * 8192 * 8192


def task(dtype: str, flops: float = FLOPS) -> TaskWork:
    op = OpWork(op="aten.mm", category="matmul", flops=flops, dtype=dtype, bytes_read=1e6, bytes_written=1e6)
    return TaskWork(forward=ForwardWork(steps=[op]), input_bytes=1e6, parameter_bytes=0, output_bytes=1e6)


# strict mode's normwise bounds by row (executor/wire/_modes.py) and the path each admits for fp32 products
@pytest.mark.parametrize(
    ("budget", "path", "tflops"),
    [
        (2e-5, "bf16x3", 989.4 / 3),  # float32: three bf16 products, twice three tf32 products' rate
        (2e-3, "fp16", 989.4),  # tf32 and float16: one fp16 product has TF32's error at twice its rate
        (1.2e-2, "fp16", 989.4),  # bfloat16: bf16 passes too, at the same rate (the first of the tie is said)
        (0.08, "fp8", 1978.9),  # float8
    ],
)
def test_fp32_products_take_the_fastest_path_the_budget_admits(budget: float, path: str, tflops: float) -> None:
    sol = speed_of_light(task("float32"), H200, budget)
    assert sol.fp32_matmuls == path and sol.matmul_paths == {"float32": path}
    assert sol.bound == "compute" and sol.compute_ms == pytest.approx(FLOPS / (tflops * 1e12) * 1e3)


def test_each_admitted_path_errs_within_the_budget_and_the_next_faster_one_does_not() -> None:
    # fp16 (3.0e-4) fails strict's fp32 bound, bf16 (2.4e-3) its tf32 bound, fp8 (3.7e-2) its bfloat16 bound
    for budget, rejected in ((2e-5, "fp16"), (2e-3, "bf16"), (1.2e-2, "fp8")):
        chosen = matmul_path("float32", budget, H200)
        assert chosen.error <= budget < PATHS[rejected].error
    # the split that loses nothing is never slower than Triton's own tf32x3, nor than fp32 on the CUDA cores
    for name in GPUS:
        gpu = GPUS[name]
        fastest = matmul_path("float32", 2e-5, gpu).tflops(gpu) or 0.0
        assert fastest >= max(PATHS["tf32x3"].tflops(gpu) or 0.0, gpu.fp32_tflops)


def test_other_dtypes_take_their_own_rate_unless_the_tolerance_admits_a_faster_one() -> None:
    for dtype, path in (("float16", "fp16"), ("bfloat16", "bf16"), ("float64", "fp64")):
        sol = speed_of_light(task(dtype), H200, {dtype: 1e-10})
        assert sol.matmul_paths == {dtype: path}
        assert sol.compute_ms == pytest.approx(FLOPS / (PATHS[path].tflops(H200) or 0) / 1e9)
    assert speed_of_light(task("float16"), H200, {"float16": 0.08}).matmul_paths == {"float16": "fp8"}
    # a GPU without fp8 (an A100) takes fp8-admitting products at its fp16 rate
    assert matmul_path("float32", 0.08, GPUS["A100"]).name == "fp16"
    # a dtype nobody gave a budget for is held to strict's fp32 bound
    mixed = TaskWork(
        forward=ForwardWork(steps=[*task("float32").forward.steps, *task("bfloat16").forward.steps]),
        input_bytes=1e6,
        parameter_bytes=0,
        output_bytes=1e6,
    )
    assert speed_of_light(mixed, H200, {"bfloat16": 1.2e-2}).matmul_paths == {"float32": "bf16x3", "bfloat16": "bf16"}


def test_a_tolerance_gives_its_normwise_bound_or_a_fifth_of_its_elementwise_one() -> None:
    scaled = Tolerance(kind="scaled", atol=1e-4, rtol=1e-4, norm_rtol=2e-5, dtype="float32", reference_dtype="float64")
    paper = Tolerance(kind="allclose", atol=5e-2, rtol=5e-2, dtype="float32", reference_dtype="float32")
    kernelbench = Tolerance(kind="allclose", atol=1e-4, rtol=1e-4, dtype="float32", reference_dtype="float32")
    assert normwise_budget(scaled) == 2e-5 and normwise_budget(paper) == pytest.approx(1e-2)
    assert matmul_path("float32", normwise_budget(kernelbench), H200).name == "bf16x3"
    assert matmul_path("float32", normwise_budget(paper), H200).name == "fp16"


@pytest.mark.parametrize(("name", "precision", "products"), [("bf16x3", "bf16", 3), ("fp16x3", "fp16", 3)])
def test_split_products_in_the_ir_are_tensor_core_work(name: str, precision: str, products: int) -> None:
    m = n = 256
    k = 1024
    counts = count_launch(parse_ttir((DATA / f"gemm_{name}.ttir").read_text()), {"M": m, "N": n, "K": k}, (16, 1, 1))
    # three products of 16-bit operands, whatever the dot's inputPrecision attribute says (the IR writes tf32)
    assert counts.dot_flops == {precision: pytest.approx(products * 2 * m * n * k)}
    assert counts.simt > 0  # the split in registers is CUDA-core work
    config = LaunchConfig(
        config="BM=64, BN=64, BK=32",
        programs=16,
        num_warps=4,
        num_stages=3,
        dot_flops=counts.dot_flops,
        dot_tile=counts.dot_tile,
        simt=counts.simt,
        bytes_read=(m + n) * k * 4,
        bytes_written=m * n * 4,
    )
    part = estimate_forward(ForwardWork(steps=[LaunchWork(kernel="k", configs=[config])]), H200).parts[0]
    # whichever bounds the launch, its dots are said to run on the tensor cores, never as fp32 on the CUDA cores
    assert part.limit in (f"tensor cores ({precision})", "CUDA cores (element-wise)", "memory", "caches", "launch")
    assert f"GFLOP of {precision} dots (tensor cores)" in part.detail and "fp32 dots" not in part.detail
    # with the split's element-wise work a thousand times heavier, the CUDA cores bound it, and say by what
    heavy = config.model_copy(update={"simt": counts.simt * 1e3})
    part = estimate_forward(ForwardWork(steps=[LaunchWork(kernel="k", configs=[heavy])]), H200).parts[0]
    assert part.limit == "CUDA cores (element-wise)"


def test_fp16_operands_are_fp16_products_whatever_precision_the_dot_names() -> None:
    counts = count_launch(
        parse_ttir((DATA / "gemm_fp16.ttir").read_text()), {"M": 256, "N": 256, "K": 1024}, (16, 1, 1)
    )
    assert counts.dot_flops == {"fp16": pytest.approx(2 * 256 * 256 * 1024)}
    fma = LaunchConfig(config="c", programs=16, num_warps=4, num_stages=3, dot_flops={"ieee": 1e12})
    part = estimate_forward(ForwardWork(steps=[LaunchWork(kernel="k", configs=[fma])]), H200).parts[0]
    assert part.limit == "CUDA cores (fp32 dots)" and "GFLOP of fp32 dots (CUDA cores)" in part.detail
