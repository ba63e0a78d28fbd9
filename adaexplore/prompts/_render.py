"""Renders the templates beside this file. They load once, with StrictUndefined, so a missing template or
an unfilled slot fails at once rather than reaching a model."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

import jinja2
from pydantic import BaseModel, ConfigDict

__all__ = [
    "DistillContext",
    "JudgeRuleContext",
    "KernelContext",
    "LargeStepContext",
    "RetryContext",
    "ReviewContext",
    "SmallStepContext",
    "TuneContext",
    "render_distill_rule",
    "render_judge_rule",
    "render_large_step",
    "render_retry",
    "render_review",
    "render_skill_memory",
    "render_small_step",
    "render_tune",
    "render_with_memory",
]


class KernelContext(BaseModel):
    model_config = ConfigDict(extra="forbid")

    node_id: int
    kind: str
    verdict: str
    correct: bool
    code: str


class LargeStepContext(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_source: str
    pool: list[KernelContext]


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


class TuneContext(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_source: str
    memory: str
    history: list[KernelContext]
    current: KernelContext
    error: str
    notes: str
    guidance: str


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


def render_skill_memory(rules: list[str]) -> str:
    return _environment().get_template("skill_memory.j2").render(rules=rules)


def render_distill_rule(context: DistillContext) -> str:
    return _render("distill_rule.j2", context)


def render_review(context: ReviewContext) -> str:
    return _render("review.j2", context)


def render_tune(context: TuneContext) -> str:
    return _render("tune.j2", context)


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
