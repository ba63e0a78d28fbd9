"""Which kernels the check at the task's full reduction lengths takes (stages/precision.py), and their precision path
in words, from what the full-size compile recorded: known once the candidate's worker has compiled the kernel and the
judge has loaded the task, before the trials run (so that a worker for the check can start beside them)."""

from __future__ import annotations

from adaexplore.domain import Mode
from adaexplore.executor.pipeline.stages import speed
from adaexplore.executor.pipeline.stages.context import Run
from adaexplore.executor.tasks._task import Task
from adaexplore.roofline import LaunchWork, OpWork

__all__ = ["CHECKED_PRECISIONS", "may_need", "needed", "precision_path"]

# the dots whose operands the kernel rounds or splits for the tensor cores (roofline.DOT_PRECISIONS)
CHECKED_PRECISIONS = ("tf32", "tf32x3", "bf16", "fp16")
_COUNTS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}


def _dot_flops(ctx: Run) -> dict[str, float]:
    """The dots' FLOPs at full size by precision, over the forward's launches (an autotuned kernel's first config:
    its configs tile the same products)."""
    flops: dict[str, float] = {}
    if ctx.candidate_work is None:
        return flops
    for step in ctx.candidate_work.steps:
        if isinstance(step, LaunchWork) and step.configs:
            for precision, amount in step.configs[0].dot_flops.items():
                flops[precision] = flops.get(precision, 0.0) + amount
    return flops


def may_need(task: Task, mode: Mode) -> bool:
    """Whether the task's tolerance wants fp32 accuracy of its fp32 outputs (more than a single tf32 product
    gives), so that a kernel of it whose dots round or split their operands is checked at full length."""
    return speed.fp32_path(task, mode) != "tf32"


def needed(ctx: Run) -> bool:
    """Whether the kernel's full-size record shows dots on rounded or split operands, its outputs are held to
    fp32 accuracy, and the judge found reduction lengths that the small sizes shortened."""
    if ctx.reduction_sizes is None or ctx.candidate_work is None:
        return False
    if not may_need(ctx.task, ctx.mode):
        return False
    if ctx.correctness is not None and ctx.correctness.tolerance.dtype != "float32":
        return False
    return any(_dot_flops(ctx).get(precision) for precision in CHECKED_PRECISIONS)


def precision_path(ctx: Run) -> str:
    """The kernel's dots in words: "three bf16 products per multiply-add of the task (its fp32 operands split into
    bf16 parts)", from the full-size record's FLOPs by precision against those of the task's matrix products."""
    flops = _dot_flops(ctx)
    task = 0.0
    if ctx.task_work is not None:
        task = sum(
            op.flops
            for op in ctx.task_work.forward.steps
            if isinstance(op, OpWork) and op.category in ("matmul", "conv")
        )
    parts = []
    for precision in sorted((p for p in CHECKED_PRECISIONS if flops.get(p)), key=lambda p: -flops[p]):
        if precision == "tf32x3":
            parts.append('Triton\'s input_precision="tf32x3" (three tf32 products, the small ones summed apart)')
            continue
        if task <= 0:
            parts.append(f"{precision} products")
            continue
        ratio = flops[precision] / task
        whole = round(ratio)
        count = _COUNTS.get(whole, str(whole)) if whole and abs(ratio - whole) <= 0.2 * whole else f"{ratio:.1f}"
        plural = "" if count == "one" else "s"
        split = f" (its fp32 operands split into {precision} parts)" if ratio > 1.5 else ""
        parts.append(f"{count} {precision} product{plural} per multiply-add of the task{split}")
    return " and ".join(parts) or "tensor-core products"
