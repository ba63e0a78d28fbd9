"""A task's speed of light on a GPU model (SOL-ExecBench's notion, computed the roofline way SOLAR does): the
larger of the time to move its minimum traffic at the HBM's peak and the time to do its matrix-multiply FLOPs by
the fastest path whose error the task's tolerance admits (never under one launch).

A path is how a kernel can take a product whose operands are of some dtype: in that dtype on the unit that does it
(fp32 on the CUDA cores, fp64, fp16, bf16 on the tensor cores), or with its operands rounded to a narrower type
(one fp16, bf16, tf32 or fp8 product), or split into a high and a low part of a narrower type whose three cross
products (hi*hi, hi*lo, lo*hi) are accumulated in fp32 (`bf16x3`, `fp16x3`, `tf32x3`). Each path's error is what
`benchmarks/split_precision.py` measured by emulating its roundings in float64 at a full KernelBench reduction
length (a Linear layer, K = 8192, x from `torch.rand` or `torch.randn`, `nn.Linear`'s weights, fp32
accumulation in blocks of 32): the normwise relative error, the larger of the two draws.

    path      products  normwise error   strict fp32 (2e-5)   strict tf32 row (2e-3)
    ieee      fp32 FMA        2.9e-7          passes               passes
    tf32x3    3 x tf32        5.0e-7          passes               passes
    fp16x3    3 x fp16        2.8e-6          passes               passes   (5.0e-7 with the weight scaled by 2^8)
    bf16x3    3 x bf16        4.6e-6          passes               passes   (worst element at 26 % of its allowance)
    tf32      1 x tf32        3.0e-4          fails (15x)          passes   (7.9e-4 where fp32 bits are truncated)
    fp16      1 x fp16        3.0e-4          fails (15x)          passes
    bf16      1 x bf16        2.4e-3          fails                fails
    fp8       1 x e4m3        3.7e-2          fails                fails    (passes strict's float8 row, 0.08)

So where a tolerance holds fp32 outputs to fp32 accuracy, three bf16 (or fp16) products of split operands pass it
with a fifth of its normwise bound, at twice the rate of three tf32 products: that is the path, not `tf32x3`. A
split that loses accuracy does not pass (two products, the weight's low part dropped: 1.7e-3; a split by truncation
instead of rounding: 2.8e-5, its errors all toward zero, so they do not average out over the reduction).

Where a tolerance admits TF32's error, one fp16 product is admitted too: fp16 and TF32 have the same 10-bit
mantissa, so their rounding errors are the same (3.0e-4 in both) and fp16 goes at twice TF32's rate. Its range is
narrower (at most 65504; below 6.1e-5 it loses precision), but the operands of KernelBench's tasks lie far inside
it (`rand`, `randn`, weights within 1/sqrt(K)), a subnormal's absolute error (3e-8 at most) is below what a normal
number's rounding costs the product, and a kernel can scale its operands by powers of two (exact) to stay in range.
The floor takes the fastest path on the GPU, the errors aside, so a path no better than fp16 at the same rate (bf16
where its error passes) changes nothing on the GPUs of the table, whose fp16 and bf16 rates are equal.

A path is admitted where its error is within the tolerance's normwise bound (`normwise_budget`), and always for
the operands' own dtype. The table is for fp32 operands: for fp16 or bf16 operands the own path is already the
16-bit rate, and only fp8 could be faster. Products of fp64 operands take the fp64 rate; an emulation of fp64 on
the int8 tensor cores (Ozaki's schemes) could be faster on a Hopper GPU, and no KernelBench task is fp64. A kernel
measured or estimated under its task's speed of light is flagged (`faster_than_light`) where a verdict is made, if
it is under the part no timing can beat (`hard_ms`: the compute bound, and the traffic beyond what the L2 cache
holds at the HBM's peak); under the rest (one launch's cost, a figure measured back to back; traffic a cache can
keep from the HBM) it gets a note.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from adaexplore.domain import SpeedOfLight, Tolerance
from adaexplore.roofline._gpus import GpuSpec
from adaexplore.roofline._work import OpWork, TaskWork

__all__ = ["PATHS", "STRICT_FP32_BUDGET", "MatmulPath", "matmul_path", "normwise_budget", "speed_of_light"]


@dataclass(frozen=True)
class MatmulPath:
    name: str
    precision: str  # the unit's precision for each product (a GpuSpec.peak_tflops key)
    products: int  # products per product of the reference
    error: float  # normwise relative error on fp32 operands at K = 8192 (see the module's docstring)
    words: str  # what create_task says of it

    def tflops(self, gpu: GpuSpec) -> float | None:
        """The rate of the reference's FLOPs this path gives on `gpu` (None: the GPU lacks its precision)."""
        peak = gpu.peak_tflops(self.precision)
        return peak / self.products if peak else None


PATHS: dict[str, MatmulPath] = {
    path.name: path
    for path in (
        MatmulPath("fp8", "fp8", 1, 3.7e-2, "one fp8 product (fp8)"),
        MatmulPath("fp16", "fp16", 1, 3.0e-4, "one fp16 product (fp16): TF32's precision at twice its rate"),
        MatmulPath("bf16", "bf16", 1, 2.4e-3, "one bf16 product (bf16)"),
        MatmulPath("tf32", "tf32", 1, 3.0e-4, "one tf32 product (tf32)"),
        MatmulPath(
            "bf16x3",
            "bf16",
            3,
            4.6e-6,
            "three bf16 (or fp16) products of operands split into high and low parts (bf16x3): fp32 accuracy at "
            "twice the rate of tf32x3",
        ),
        MatmulPath("fp16x3", "fp16", 3, 2.8e-6, "three fp16 products of split operands (fp16x3): fp32 accuracy"),
        MatmulPath("tf32x3", "tf32", 3, 5.0e-7, "three tf32 products of split operands (tf32x3): fp32 accuracy"),
        MatmulPath("ieee", "fp32", 1, 2.9e-7, "fp32 on the CUDA cores (ieee)"),
        MatmulPath("fp64", "fp64", 1, 0.0, "fp64 on the tensor cores (fp64)"),
        MatmulPath("int8", "int8", 1, float("inf"), "int8 on the tensor cores (int8)"),
    )
}
# each operand dtype's own path: always admitted, whatever the tolerance
_OWN = {
    "float32": "ieee",
    "float": "ieee",
    "float64": "fp64",
    "double": "fp64",
    "float16": "fp16",
    "half": "fp16",
    "bfloat16": "bf16",
    "int8": "int8",
    "uint8": "int8",
}
# strict mode's normwise bound on fp32 outputs: the budget of a dtype nobody gave one for
STRICT_FP32_BUDGET = 2e-5
# an elementwise relative tolerance (allclose) is held by errors up to about five times the normwise one at the
# largest elements of millions
_ELEMENTWISE_SHARE = 5.0


def normwise_budget(tolerance: Tolerance) -> float:
    """The normwise relative error a tolerance admits: its own bound where it has one (strict's `scaled`), else a
    fifth of its relative tolerance."""
    if tolerance.norm_rtol is not None:
        return tolerance.norm_rtol
    return tolerance.rtol / _ELEMENTWISE_SHARE


def _own(dtype: str) -> str:
    name = dtype.removeprefix("torch.")
    return "fp8" if name.startswith("float8") else _OWN.get(name, "fp16")


def matmul_path(dtype: str, budget: float, gpu: GpuSpec) -> MatmulPath:
    """The fastest path on `gpu` for products of `dtype` operands under a normwise error `budget`: the operands'
    own path, or any whose error is within the budget (of paths as fast, the own one, else the first of `PATHS`)."""
    own = _own(dtype)
    admitted = [p for p in PATHS.values() if (p.name == own or p.error <= budget) and p.tflops(gpu)]
    if not admitted:  # a precision this GPU lacks (fp8 on an A100) runs converted to fp16
        return PATHS["fp16"]
    order = list(PATHS)
    return max(admitted, key=lambda p: (p.tflops(gpu) or 0.0, p.name == own, -order.index(p.name)))


def _matmul_dtypes(ops: list[OpWork]) -> list[str]:
    return sorted({op.dtype for op in ops if op.flops})


def speed_of_light(
    work: TaskWork, gpu: GpuSpec, budgets: Mapping[str, float] | float = STRICT_FP32_BUDGET
) -> SpeedOfLight:
    """The task's speed of light on `gpu`. `budgets`: the normwise error its tolerance admits, per dtype of the
    reference's products or one figure for all (a dtype not given: `STRICT_FP32_BUDGET`). A reference operator
    whose FLOPs PyTorch's counter does not know adds its bytes only, and is named in `uncounted`."""

    def budget(dtype: str) -> float:
        if isinstance(budgets, Mapping):
            return budgets.get(dtype, STRICT_FP32_BUDGET)
        return budgets

    ops = [s for s in work.forward.steps if isinstance(s, OpWork)]
    paths = {dtype: matmul_path(dtype, budget(dtype), gpu) for dtype in _matmul_dtypes(ops)}
    compute_s = 0.0
    for op in ops:
        if op.flops:
            compute_s += op.flops / ((paths[op.dtype].tflops(gpu) or gpu.fp16_tflops) * 1e12)
    memory_s = work.min_bytes / (gpu.hbm_gbps * 1e9)
    # what no kernel beats however it is timed: up to the L2 cache's bytes may never reach the HBM
    beyond_cache_s = max(0.0, work.min_bytes - gpu.l2_bytes) / (gpu.hbm_gbps * 1e9)
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
        hard_ms=max(compute_s, beyond_cache_s) * 1e3,
        bytes=work.min_bytes,
        flops=sum(op.flops for op in ops),
        fp32_matmuls=matmul_path("float32", budget("float32"), gpu).name,
        matmul_paths={dtype: path.name for dtype, path in paths.items()},
        uncounted=work.uncounted(),
        complete=work.forward.complete,
    )
