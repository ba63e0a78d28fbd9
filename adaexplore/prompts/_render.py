"""Renders the templates beside this file. They load once, with StrictUndefined, so a missing template or
an unfilled slot fails at once rather than reaching a model."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import jinja2
from pydantic import BaseModel, ConfigDict

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
