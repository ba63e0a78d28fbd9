"""A task's speed of light and a forward's estimated time, from records of what they do (no torch, no GPU)."""

from __future__ import annotations

import pytest

from adaexplore.errors import ConfigError
from adaexplore.roofline import (
    GPUS,
    ForwardWork,
    LaunchConfig,
    LaunchWork,
    OpWork,
    TaskWork,
    estimate_forward,
    gpu_for_device,
    gpu_spec,
    speed_of_light,
)

H200 = GPUS["H200"]
GEMM_FLOPS = 2 * 1024 * 8192 * 8192  # KernelBench Level 2 problem 12's Linear


def gemm_task(extra: list[OpWork] | None = None) -> TaskWork:
    addmm = OpWork(op="aten.addmm", category="matmul", flops=GEMM_FLOPS, bytes_read=300e6, bytes_written=33.5e6)
    return TaskWork(
        forward=ForwardWork(steps=[addmm, *(extra or [])]),
        input_bytes=33.5e6,
        parameter_bytes=268.5e6,
        output_bytes=33.5e6,
    )


def test_a_gemm_is_compute_bound_at_the_cheapest_rate_its_tolerance_admits() -> None:
    strict = speed_of_light(gemm_task(), H200, 2e-5)  # strict mode's normwise bound on fp32 outputs
    assert strict.bound == "compute" and strict.fp32_matmuls == "bf16x3"
    # three bf16 products per FLOP at the H200's 989.4 TFLOP/s: twice as fast as three tf32 products
    assert strict.ms == pytest.approx(GEMM_FLOPS * 3 / 989.4e12 * 1e3)
    assert strict.ms == pytest.approx(GEMM_FLOPS * 3 / 494.7e12 * 1e3 / 2)
    assert strict.memory_ms == pytest.approx((33.5e6 + 268.5e6 + 33.5e6) / 4.8e12 * 1e3)
    loose = speed_of_light(gemm_task(), H200, 1e-2)  # paper mode's 5e-2, elementwise
    assert loose.fp32_matmuls == "fp16" and loose.ms == pytest.approx(strict.ms / 3)
    # a faster memory makes no difference to a compute-bound task; more FLOP/s does
    assert speed_of_light(gemm_task(), GPUS["B200"], 2e-5).ms < strict.ms


def test_a_memory_bound_task_is_its_bytes_at_the_hbm_peak() -> None:
    relu = TaskWork(
        forward=ForwardWork(steps=[OpWork(op="aten.relu", category="memory", bytes_read=6.4e9, bytes_written=6.4e9)]),
        input_bytes=6.4e9,
        parameter_bytes=0,
        output_bytes=6.4e9,
    )
    sol = speed_of_light(relu, H200)
    assert sol.bound == "memory" and sol.ms == pytest.approx(12.8e9 / 4.8e12 * 1e3)
    assert speed_of_light(relu, GPUS["H100"]).ms == pytest.approx(12.8e9 / 3.35e12 * 1e3)


def test_an_operator_without_a_flop_formula_is_counted_by_its_bytes_and_named() -> None:
    task = gemm_task([OpWork(op="aten._fft_r2c", category="uncounted", bytes_read=1e6, bytes_written=1e6)])
    sol = speed_of_light(task, H200)
    assert sol.uncounted == ["aten._fft_r2c"] and sol.flops == GEMM_FLOPS


def test_a_tiny_task_costs_one_launch_at_least() -> None:
    tiny = TaskWork(forward=ForwardWork(), input_bytes=4096, parameter_bytes=0, output_bytes=4096)
    sol = speed_of_light(tiny, H200)
    assert sol.bound == "launch" and sol.ms == pytest.approx(H200.launch_us / 1e3)


def test_the_table_names_the_gpus_it_knows_and_refuses_others() -> None:
    assert gpu_spec("h100 pcie").name == "H100 PCIe" and gpu_spec("b200").sms == 148
    with pytest.raises(ConfigError, match="H200, H100, H100 PCIe, A100, L40S, B200"):
        gpu_spec("RTX 4090")
    assert gpu_for_device("NVIDIA H100 PCIe").name == "H100 PCIe"
    assert gpu_for_device("NVIDIA H100 80GB HBM3").name == "H100"
    assert gpu_for_device("NVIDIA GeForce RTX 4090") is None


def launch(**fields: object) -> LaunchConfig:
    base: dict[str, object] = {
        "config": "BLOCK_M=128, BLOCK_N=128, BLOCK_K=32",
        "programs": 512,
        "num_warps": 8,
        "num_stages": 4,
        "registers": 200,
        "shared_memory": 131072,
        "dot_flops": {"tf32x3": float(GEMM_FLOPS)},
        "dot_tile": (128, 128, 32),
        "bytes_read": 302e6,
        "bytes_written": 33.5e6,
        "requested_bytes": 4.3e9,
    }
    return LaunchConfig(**(base | fields))  # type: ignore[arg-type]


def one(config: LaunchConfig) -> float:
    return estimate_forward(ForwardWork(steps=[LaunchWork(kernel="k", configs=[config])]), H200).ms


def test_the_precision_of_a_dot_decides_its_speed() -> None:
    split = one(launch())
    plain = one(launch(dot_flops={"tf32": float(GEMM_FLOPS)}))
    fma = one(launch(dot_flops={"ieee": float(GEMM_FLOPS)}))
    assert plain < split < fma  # one tensor-core product < three < the CUDA cores
    hand_split = one(launch(dot_flops={"tf32": 3.0 * GEMM_FLOPS}))
    assert hand_split < split  # three plain products beat Triton's own split, as measured on the H200


def test_what_slows_a_dot_slows_its_estimate() -> None:
    base = one(launch())
    assert one(launch(serialized_mma=True)) > base
    assert one(launch(spill_bytes=1400, spilled=True)) > base
    assert one(launch(wgmma=False)) > base
    assert one(launch(num_stages=2)) > base  # fewer K elements in flight


def test_a_tile_under_128_by_128_hides_less_of_its_loads_behind_the_same_stages() -> None:
    full = one(launch(num_stages=3))  # 128 x 128 x 32: 64 K elements in flight
    assert one(launch(num_stages=3, dot_tile=(64, 128, 32))) > full  # half the MMA work per stage
    assert one(launch(num_stages=3, dot_tile=(128, 256, 32))) == full  # a larger tile is not credited with more
    assert one(launch(num_stages=5, dot_tile=(64, 128, 32))) == pytest.approx(one(launch(num_stages=3)))


def test_a_library_gemm_in_fp32_runs_on_the_cuda_cores_unless_tf32_is_allowed() -> None:
    work = gemm_task().forward
    fp32 = estimate_forward(work, H200)
    tf32 = estimate_forward(work, H200, tf32_matmul=True)
    assert fp32.parts[0].limit == "CUDA cores (fp32)" and tf32.parts[0].limit == "tensor cores (tf32)"
    assert tf32.ms < fp32.ms
    # the fused Triton GEMM on the tensor cores beats the library's fp32 GEMM plus a pass over its output
    epilogue = OpWork(op="aten.leaky_relu", category="memory", bytes_read=33.5e6, bytes_written=33.5e6)
    library = estimate_forward(ForwardWork(steps=[*work.steps, epilogue]), H200)
    assert one(launch()) < library.ms


def test_an_autotuned_kernel_takes_its_fastest_config_and_views_cost_nothing() -> None:
    slow, fast = launch(num_stages=2, spill_bytes=3000, spilled=True), launch()
    steps = [OpWork(op="aten.t", category="view"), LaunchWork(kernel="k", configs=[slow, fast], autotuned=True)]
    estimate = estimate_forward(ForwardWork(steps=steps), H200)
    assert len(estimate.parts) == 1 and estimate.ms == pytest.approx(one(fast))


def test_a_memory_bound_launch_is_its_bytes_and_a_grid_of_nothing_is_free() -> None:
    copy = launch(dot_flops={}, dot_tile=None, bytes_read=4e9, bytes_written=4e9, requested_bytes=8e9, programs=65536)
    part = estimate_forward(ForwardWork(steps=[LaunchWork(kernel="copy", configs=[copy])]), H200).parts[0]
    assert part.limit == "memory" and part.ms > 8e9 / 4.8e12 * 1e3
    assert one(launch(programs=0)) == 0.0
