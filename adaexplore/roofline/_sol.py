"""A task's speed of light on a GPU model (SOL-ExecBench's notion, computed the roofline way SOLAR does): the
larger of the time to move its minimum traffic at the HBM's peak and the time to do its matrix-multiply FLOPs at
the fastest tensor-core rate its tolerance admits."""

from __future__ import annotations

from typing import Literal

from adaexplore.domain import SpeedOfLight
from adaexplore.roofline._gpus import GpuSpec
from adaexplore.roofline._work import OpWork, TaskWork

__all__ = ["fp32_matmul_path", "speed_of_light"]

# an fp32 output held to at least this relative error admits TF32 products (one tensor-core pass)
_TF32_ENOUGH = 5e-3


def fp32_matmul_path(fp32_rtol: float) -> str:
    """How a task's fp32 matrix multiplies can go at best under a tolerance: "tf32" where TF32's error passes,
    else "tf32x3" (three TF32 products, fp32 accuracy at a third of the TF32 rate)."""
    return "tf32" if fp32_rtol >= _TF32_ENOUGH else "tf32x3"


def _compute_seconds(op: OpWork, gpu: GpuSpec, fp32_path: str) -> float:
    if not op.flops:
        return 0.0
    if op.dtype in ("float32", "float"):
        rate = gpu.tf32_tflops / (3 if fp32_path == "tf32x3" else 1)
    elif op.dtype in ("float64", "double"):
        rate = gpu.fp64_tflops
    else:
        precision = {"bfloat16": "bf16", "float16": "fp16", "int8": "int8"}.get(op.dtype, "fp8")
        rate = gpu.peak_tflops(precision) or gpu.fp16_tflops
    return op.flops / (rate * 1e12)


def speed_of_light(work: TaskWork, gpu: GpuSpec, fp32_path: str = "tf32x3") -> SpeedOfLight:
    """The task's speed of light on `gpu`. A reference operator whose FLOPs PyTorch's counter does not know
    adds its bytes only, and is named in `uncounted`."""
    ops = [s for s in work.forward.steps if isinstance(s, OpWork)]
    compute_s = sum(_compute_seconds(op, gpu, fp32_path) for op in ops)
    memory_s = work.min_bytes / (gpu.hbm_gbps * 1e9)
    launch_s = gpu.launch_us * 1e-6
    ms = max(compute_s, memory_s, launch_s) * 1e3
    bound: Literal["memory", "compute", "launch"]
    if ms == launch_s * 1e3 and launch_s > max(compute_s, memory_s):
        bound = "launch"
    else:
        bound = "compute" if compute_s > memory_s else "memory"
    return SpeedOfLight(
        gpu=gpu.name,
        ms=ms,
        bound=bound,
        memory_ms=memory_s * 1e3,
        compute_ms=compute_s * 1e3,
        bytes=work.min_bytes,
        flops=sum(op.flops for op in ops),
        fp32_matmuls=fp32_path,
        uncounted=work.uncounted(),
        complete=work.forward.complete,
    )
