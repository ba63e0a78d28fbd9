"""Every text a model reads, as template files, and the one module that renders them."""

from adaexplore.prompts._render import (
    DistillContext,
    KernelContext,
    LargeStepContext,
    SmallStepContext,
    render_distill_rule,
    render_large_step,
    render_skill_memory,
    render_small_step,
)

__all__ = [
    "DistillContext",
    "KernelContext",
    "LargeStepContext",
    "SmallStepContext",
    "render_distill_rule",
    "render_large_step",
    "render_skill_memory",
    "render_small_step",
]
