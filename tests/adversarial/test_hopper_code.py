"""What Hopper code needs: Triton's host-side tensor descriptors (the way to feed the bulk copy engine, TMA) past the
import allow-list, and torch.cuda's questions about the device answered during CPU checks as the target GPU would.

On a machine without a GPU these run on the compile + interpret backends: each kernel compiled for sm_90 (at the
small sizes and the task's full ones) and interpreted; on a GPU on the cuda backend, where the GPU answers. The
verdicts expected are the same on both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from adaexplore.executor import Evaluator, Status, load_task
from tests.conftest import ON_GPU, fast_settings

HERE = Path(__file__).parent
CANDIDATES = HERE / "candidates"
SCALE_RELU = load_task(HERE.parent / "executor" / "data" / "scale_relu_task.py")
MATMUL = load_task(HERE / "tasks" / "matmul_task.py")

# What CUDA says of an H200 (the default target) and of an A100 (another target of the table), as the GPU
# itself reports it: written out here, not read from adaexplore's table, which these checks hold to it.
H200 = {
    "name": "NVIDIA H200",
    "capability": [9, 0],
    "sms": 132,
    "shared_per_block": 48 * 1024,
    "shared_per_block_optin": 227 * 1024,
    "shared_per_sm": 228 * 1024,
    "l2": 60 * 2**20,
    "regs_per_sm": 65536,
    "threads_per_sm": 2048,
    "warp_size": 32,
}
A100 = {"name": "NVIDIA A100-SXM4-80GB", "capability": [8, 0], "sms": 108, "shared_per_block_optin": 163 * 1024}

pytestmark = pytest.mark.anyio


def candidate(name: str) -> str:
    return (CANDIDATES / f"{name}.py").read_text()


def _checked_everywhere(result: Any, small: str) -> None:
    """An ok verdict, with what only one kind of machine shows: timing on a GPU, the sm_90 compiles without one."""
    assert result.status is Status.ok, result.message
    if ON_GPU:
        assert result.timing is not None, result.message
        return
    assert f"compiles for sm_90 at the small sizes ({small}) and the task's full ones" in result.message
    said = "every launch the interpreter ran was also compiled for sm_90"
    assert any(f.code == "compiled_for_sm90" and f.message.startswith(said) for f in result.audit.flags)


async def test_a_gemm_fed_by_host_tensor_descriptors_is_judged_ok(evaluator: Evaluator) -> None:
    # `from triton.tools.tensor_descriptor import TensorDescriptor`, once refused by the import allow-list
    result = await evaluator.evaluate(MATMUL, candidate("h22_honest_tma_gemm"))
    _checked_everywhere(result, "m=64, k=256, n=64")


async def test_a_persistent_kernel_sized_by_the_multiprocessor_count_is_judged_ok(evaluator: Evaluator) -> None:
    # torch.cuda.get_device_properties(0).multi_processor_count, read as the module is imported and in forward
    result = await evaluator.evaluate(SCALE_RELU, candidate("h22_honest_persistent_grid"))
    _checked_everywhere(result, "rows=3, cols=77")


def _queries(expected: dict[str, Any]) -> str:
    source = candidate("h22_device_queries")
    assert "EXPECTED = None" in source
    return source.replace("EXPECTED = None", f"EXPECTED = {expected!r}", 1)


def _real_gpu() -> dict[str, Any]:
    props = torch.cuda.get_device_properties(0)
    return {
        "name": props.name,
        "capability": list(torch.cuda.get_device_capability(0)),
        "sms": props.multi_processor_count,
        "shared_per_block_optin": props.shared_memory_per_block_optin,
        "shared_per_sm": props.shared_memory_per_multiprocessor,
    }


async def test_torch_cuda_answers_as_the_target_gpu(evaluator: Evaluator) -> None:
    # during CPU checks the target (an H200 by default) answers, in every form of the question; on a GPU, the GPU
    expected = _real_gpu() if ON_GPU else dict(H200)
    expected |= {"same": True, "count_at_least_one": True, "current_is_counted": True}
    expected["capability_of_x"] = expected["major_minor"] = expected["capability"]
    expected["device_name"] = expected["name"]
    result = await evaluator.evaluate(SCALE_RELU, _queries(expected))
    assert result.status is Status.ok, result.message


@pytest.mark.skipif(ON_GPU, reason="on a GPU the GPU answers, whatever the target")
async def test_another_target_gpu_answers_as_itself(tmp_path: Path) -> None:
    expected = {**A100, "capability_of_x": A100["capability"], "device_name": A100["name"]}
    settings = fast_settings(tmp_path, target_gpu="A100", warm_workers=0)  # one evaluation: no spare to stop
    async with Evaluator(settings) as evaluator:
        result = await evaluator.evaluate(SCALE_RELU, _queries(expected))
    assert result.status is Status.ok, result.message


async def test_a_device_the_machine_does_not_have_is_the_candidates_runtime_error(evaluator: Evaluator) -> None:
    # as on a GPU: the question fails in the candidate's own call, never as the evaluator's fault
    source = candidate("h22_honest_persistent_grid").replace(
        "get_device_properties(x.device)", "get_device_properties(64)"
    )
    result = await evaluator.evaluate(SCALE_RELU, source)
    assert result.status is Status.runtime_error, result.message
    assert "Invalid device id" in result.message


@pytest.mark.skipif(ON_GPU, reason="on a GPU the TMA unit reads what the descriptor says; only the interpreter checks")
async def test_a_descriptor_that_claims_more_than_its_base_reads_out_of_bounds(evaluator: Evaluator) -> None:
    source = (
        candidate("h22_honest_tma_gemm")
        .replace(
            "TensorDescriptor.from_tensor(x.contiguous(), [BM, BK])",
            "TensorDescriptor(x, [M, 4 * K], [K, 1], [BM, BK])",
        )
        .replace(
            "tma_gemm_kernel[grid](a_desc, b_desc, c_desc, K,", "tma_gemm_kernel[grid](a_desc, b_desc, c_desc, 4 * K,"
        )
    )
    result = await evaluator.evaluate(MATMUL, source)
    assert result.status is Status.runtime_error, result.message
    assert "out-of-bounds load in kernel tma_gemm_kernel" in result.message


@pytest.mark.skipif(not ON_GPU, reason="compares adaexplore's table of GPU models with a real GPU")
def test_the_table_says_of_this_gpu_what_cuda_says() -> None:
    from adaexplore.executor.worker.cpu._cuda_on_cpu import TargetDeviceProperties
    from adaexplore.roofline import gpu_for_device

    props = torch.cuda.get_device_properties(0)
    gpu = gpu_for_device(props.name)
    if gpu is None:
        pytest.skip(f"{props.name} is not in the table")
    table = TargetDeviceProperties.of(gpu)
    for field in (
        "name",
        "major",
        "minor",
        "multi_processor_count",
        "L2_cache_size",
        "shared_memory_per_block",
        "shared_memory_per_block_optin",
        "shared_memory_per_multiprocessor",
        "regs_per_multiprocessor",
        "max_threads_per_multi_processor",
        "warp_size",
    ):
        assert getattr(table, field) == getattr(props, field), field
    # nvidia-smi's figure, of which CUDA's leaves out what the driver keeps (about 1 %)
    assert 0 <= table.total_memory - props.total_memory < 0.02 * table.total_memory
