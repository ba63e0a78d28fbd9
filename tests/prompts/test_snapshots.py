"""Every prompt template (an included `_*.j2` through the templates that include it), rendered through
adaexplore.prompts with fixed inputs, against a reviewed copy of its text in snapshots/, so that a change
to what a model reads is a visible diff in review.

After an intended change to a template, rewrite the copies and review their diff:

    ADAEXPLORE_UPDATE_SNAPSHOT=1 .venv/bin/python -m pytest tests/prompts/test_snapshots.py
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from pathlib import Path

import pytest

import adaexplore.prompts as prompts
from adaexplore.domain import Degeneracy
from adaexplore.prompts import (
    DistillContext,
    JudgeRuleContext,
    KernelContext,
    LargeStepContext,
    PrecisionContext,
    RetryContext,
    ReviewContext,
    RunBriefContext,
    SmallStepContext,
)

SNAPSHOTS = Path(__file__).parent / "snapshots"
TEMPLATES = Path(prompts.__file__).parent
UPDATE = os.environ.get("ADAEXPLORE_UPDATE_SNAPSHOT") == "1"

TASK = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x * 2.0)


def get_inputs():
    return [torch.randn(1024)]


def get_init_inputs():
    return []
"""

KERNEL = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_relu(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.maximum(tl.load(x_ptr + offsets, mask=mask) * 2.0, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        scale_relu[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
        return y
"""

ERROR = "mismatch: 12 of 1024 outputs differ from the reference (max abs error 0.5 at index 7)"
MEMORY = prompts.render_skill_memory(["You cannot call a Python function from a kernel; decorate it with @triton.jit."])
CORRECT = KernelContext(node_id=4, kind="small", verdict="correct, 1.8x the reference", correct=True, code=KERNEL)
STRICT = PrecisionContext(
    mode="strict",
    reference_dtype="float64",
    kind="allclose",
    atol=1e-4,
    rtol=1e-4,
    norm_rtol=None,
    tf32_error=1.2e-3,
    tf32x3_error=2.0e-7,
    tf32_passes=False,
    tf32x3_passes=True,
)
SCALED = STRICT.model_copy(update={"mode": "paper", "kind": "scaled", "norm_rtol": 1e-2, "tf32_passes": True})
KERNELBENCH = STRICT.model_copy(update={"mode": "kernelbench", "tf32_cudnn": True})
BRIEF = "The task, tolerance, rules and skill memory: run brief 0123abcd (start_run; run://run-1/brief)."
WRONG = KernelContext(node_id=5, kind="large", verdict="wrong result", correct=False, code=KERNEL)

# name of the snapshot file (its template's name first) -> the rendering it holds
CASES: dict[str, Callable[[], str]] = {
    "distill_rule": lambda: prompts.render_distill_rule(DistillContext(code=KERNEL, status="mismatch", error=ERROR)),
    "judge_rule": lambda: prompts.render_judge_rule(
        JudgeRuleContext(
            rule="You cannot index a tensor with a Python list inside a kernel.",
            candidates=["You cannot call print in a kernel.", "You cannot use Python lists as kernel indices."],
        )
    ),
    "large_step-with_pool": lambda: prompts.render_large_step(
        LargeStepContext(task_source=TASK, pool=[CORRECT], precision=STRICT)
    ),
    "large_step-fresh": lambda: prompts.render_large_step(
        LargeStepContext(task_source=TASK, pool=[], precision=SCALED)
    ),
    "large_step-lean": lambda: prompts.render_large_step(
        LargeStepContext(
            task_source=TASK,
            pool=[CORRECT, WRONG.model_copy(update={"code": ""})],
            precision=STRICT,
            origin="Node 5 (large step) failed: mismatch: wrong result. Do not repeat its mistake.",
            task_facts=["an all-zero output 0 passes the tolerance on this task"],
            brief=BRIEF,
        )
    ),
    "run_brief-degenerate": lambda: prompts.render_run_brief(
        RunBriefContext(
            task_source=TASK,
            precision=KERNELBENCH,
            degenerate=Degeneracy(kind="noise", sizes="full").line(),
        )
    ),
    "run_brief": lambda: prompts.render_run_brief(
        RunBriefContext(task_source=TASK, precision=KERNELBENCH, speed="Kernels are timed on the GPU.")
    ),
    "retry-module": lambda: prompts.render_retry(RetryContext(problem="no fenced python block", expect="module")),
    "retry-module_truncated": lambda: prompts.render_retry(
        RetryContext(problem="the module does not parse", expect="module", truncated=True)
    ),
    "retry-edits": lambda: prompts.render_retry(
        RetryContext(problem="old_str_1 is not in the current kernel", expect="edits")
    ),
    "review-correct": lambda: prompts.render_review(
        ReviewContext(task_source=TASK, memory=MEMORY, current=CORRECT, error="")
    ),
    "review-wrong": lambda: prompts.render_review(
        ReviewContext(task_source=TASK, memory="", current=WRONG, error=ERROR)
    ),
    "skill_memory-rules": lambda: MEMORY,
    "skill_memory-empty": lambda: prompts.render_skill_memory([]),
    "small_step-correct": lambda: prompts.render_small_step(
        SmallStepContext(task_source=TASK, current=CORRECT, history=[WRONG], precision=STRICT)
    ),
    "small_step-lean": lambda: prompts.render_small_step(
        SmallStepContext(
            task_source=TASK,
            current=CORRECT,
            history=[WRONG],
            precision=STRICT,
            children=["node 6 (small step, ok, 1.900x): +1/-1 lines: `BLOCK = 512`"],
            brief=BRIEF,
        )
    ),
    "small_step-wrong": lambda: prompts.render_small_step(
        SmallStepContext(task_source=TASK, current=WRONG, history=[], precision=SCALED)
    ),
    "step_extras-everything": lambda: prompts.render_step_extras(
        error=ERROR, notes="the last edit did not apply", guidance="1. Use a larger BLOCK."
    ),
    "step_extras-bare": lambda: prompts.render_step_extras(error="", notes="", guidance=""),
    "answer_format-module": lambda: prompts.render_answer_format("module"),
    "answer_format-edits": lambda: prompts.render_answer_format("edits"),
    "with_memory": lambda: prompts.render_with_memory(MEMORY, "Write the kernel."),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_rendered_prompt_matches_its_reviewed_copy(name: str) -> None:
    current = CASES[name]()
    snapshot = SNAPSHOTS / f"{name}.txt"
    if UPDATE:
        SNAPSHOTS.mkdir(exist_ok=True)
        snapshot.write_text(current)
    if not snapshot.exists():
        pytest.fail(f"{snapshot.name} is missing; write it with ADAEXPLORE_UPDATE_SNAPSHOT=1 and review it")
    expected = snapshot.read_text()
    if current != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True), current.splitlines(keepends=True), "reviewed", "current", n=2
            )
        )
        pytest.fail(
            f"the prompt {name} has changed; if that is intended, rerun with ADAEXPLORE_UPDATE_SNAPSHOT=1 "
            f"and review the diff of snapshots/{snapshot.name}:\n{diff[:6000]}"
        )


def test_every_template_has_a_snapshot_and_every_snapshot_a_case() -> None:
    templates = {path.stem for path in TEMPLATES.glob("*.j2") if not path.name.startswith("_")}
    covered = {name.split("-")[0] for name in CASES}
    assert templates - covered == set(), "add a case to CASES for each new template"
    stale = {path.stem for path in SNAPSHOTS.glob("*.txt")} - set(CASES)
    assert stale == set(), f"snapshots/ holds copies no case renders; delete {sorted(stale)}"


def test_a_rendered_prompt_has_no_unfilled_slot() -> None:
    for name, render in CASES.items():
        text = render()
        assert "{{" not in text and "{%" not in text, name
