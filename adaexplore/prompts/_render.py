"""Renders the templates beside this file. They load once, with StrictUndefined, so a missing template or
an unfilled slot fails at once rather than reaching a model."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

import jinja2
from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "DistillContext",
    "JudgeRuleContext",
    "KernelContext",
    "LargeStepContext",
    "PrecisionContext",
    "RetryContext",
    "ReviewContext",
    "RunBriefContext",
    "SmallStepContext",
    "render_answer_format",
    "render_distill_rule",
    "render_judge_rule",
    "render_large_step",
    "render_retry",
    "render_review",
    "render_run_brief",
    "render_skill_memory",
    "render_small_step",
    "render_step_extras",
    "render_with_memory",
]


class KernelContext(BaseModel):
    model_config = ConfigDict(extra="forbid")

    node_id: int
    kind: str
    verdict: str
    correct: bool
    code: str


class PrecisionContext(BaseModel):
    """The run's tolerance for float32 outputs, with what each float32 `tl.dot` precision does against it.

    The numbers come from the run's mode (executor/wire/_modes.py); the `*_error` values are measured relative
    errors of a float32 `tl.dot` against float64 on an H200, and `*_passes` say whether that error sits
    well inside this tolerance.
    """

    model_config = ConfigDict(extra="forbid")

    mode: str
    reference_dtype: str
    kind: Literal["allclose", "scaled", "either"]
    atol: float
    rtol: float
    norm_rtol: float | None
    tf32_error: float
    tf32x3_error: float
    tf32_passes: bool
    tf32x3_passes: bool
    # whether the mode lets cuBLAS (torch.mm, F.linear, @) and cuDNN (convolutions) use TF32, in the reference and
    # in a candidate's own PyTorch calls alike (the evaluator sets both before either runs)
    tf32_matmul: bool = False
    tf32_cudnn: bool = False


class LargeStepContext(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_source: str
    pool: list[KernelContext]
    precision: PrecisionContext
    # the task's speed of light and what ranks kernels (measured time, or an estimate where nothing is timed)
    speed: str = ""
    # the node this step grows from, in one line, where it failed ("" from the root or a correct node)
    origin: str = ""
    # where the writer already holds the run's brief (the task, its precision and the rules: `render_run_brief`),
    # the sentence that cites it, and the step leaves those out; "" gives the whole prompt
    brief: str = ""
    # what the evaluator found about the task itself (an output that passes as zeros or does not depend on the
    # inputs, a tolerance widened), with what it checks instead; one line each
    task_facts: list[str] = Field(default_factory=list)


class DistillContext(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: str
    status: str
    error: str


class ReviewContext(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_source: str
    memory: str
    current: KernelContext
    error: str


class JudgeRuleContext(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rule: str
    candidates: list[str]


class RetryContext(BaseModel):
    model_config = ConfigDict(extra="forbid")

    problem: str
    expect: Literal["module", "edits"]
    truncated: bool = False


class SmallStepContext(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_source: str
    current: KernelContext
    history: list[KernelContext]
    precision: PrecisionContext
    speed: str = ""
    # the current kernel's children so far, one line each (step, status, what changed), not to be repeated
    children: list[str] = Field(default_factory=list)
    task_facts: list[str] = Field(default_factory=list)
    brief: str = ""


class RunBriefContext(BaseModel):
    """What every step of a run shares: the task, its precision and the rules a module keeps."""

    model_config = ConfigDict(extra="forbid")

    task_source: str
    precision: PrecisionContext
    speed: str = ""
    # the task is degenerate: the one line that says so (Degeneracy.line), "" where it is not
    degenerate: str = ""


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def _render(name: str, context: BaseModel) -> str:
    return _environment().get_template(name).render(**dict(context))


def render_large_step(context: LargeStepContext) -> str:
    return _render("large_step.j2", context)


def render_small_step(context: SmallStepContext) -> str:
    return _render("small_step.j2", context)


def render_run_brief(context: RunBriefContext) -> str:
    return _render("run_brief.j2", context)


def render_skill_memory(rules: list[str]) -> str:
    return _environment().get_template("skill_memory.j2").render(rules=rules)


def render_distill_rule(context: DistillContext) -> str:
    return _render("distill_rule.j2", context)


def render_review(context: ReviewContext) -> str:
    return _render("review.j2", context)


def render_step_extras(*, error: str, notes: str, guidance: str) -> str:
    """What headless mode adds after a small step's instructions: the current kernel's error, what went
    wrong in the step that made it, and a reviewer's suggestions ("" when there is none of them)."""
    return _environment().get_template("step_extras.j2").render(error=error, notes=notes, guidance=guidance)


def render_answer_format(expect: Literal["module", "edits"]) -> str:
    """How a headless model is to write its answer: a whole module (a large step), or numbered edits or a
    whole module (a small step, "edits"). MCP clients send code through compile_and_profile and never read this."""
    return _environment().get_template("answer_format.j2").render(expect=expect)


def render_judge_rule(context: JudgeRuleContext) -> str:
    return _render("judge_rule.j2", context)


def render_retry(context: RetryContext) -> str:
    return _render("retry.j2", context)


def render_with_memory(memory: str, instructions: str) -> str:
    """A step's instructions with the skill memory's prompt block before them (the instructions alone when the
    block is empty)."""
    if not memory.strip():
        return instructions
    return _environment().get_template("with_memory.j2").render(memory=memory.strip(), instructions=instructions)
