"""What every step's instructions promise: the run's tolerance from its mode's numbers, `tf32x3` named where it
passes and `ieee` as the exact path, no answer-format rule meant only for a headless model, and the starter
rule on float32 `tl.dot` saying the same."""

from __future__ import annotations

import pytest

from adaexplore.executor import EvaluationOptions, Evaluator, Mode, load_task, tolerance_for
from adaexplore.memory import load_starter
from adaexplore.prompts import (
    KernelContext,
    LargeStepContext,
    RetryContext,
    SmallStepContext,
    render_answer_format,
    render_large_step,
    render_retry,
    render_small_step,
)
from adaexplore.tools._precision import precision_context

TASK = "import torch\nclass Model(torch.nn.Module):\n    pass\n"
KERNEL = KernelContext(node_id=3, kind="large", verdict="correct", correct=True, code="class ModelNew: ...")


FLASHINFER_TOLERANCE = {"atol": 0.01, "rtol": 0.01}  # a FlashInfer-Bench task's own (its TOLERANCE)


def _steps(mode: str, allowed: str | None = None) -> list[str]:
    precision = precision_context(mode, allowed, FLASHINFER_TOLERANCE if mode == "flashinfer" else None)
    return [
        render_small_step(SmallStepContext(task_source=TASK, current=KERNEL, history=[], precision=precision)),
        render_large_step(LargeStepContext(task_source=TASK, pool=[KERNEL], precision=precision)),
    ]


@pytest.mark.parametrize("mode", [m.value for m in Mode if m is not Mode.flashinfer])
def test_each_step_states_its_modes_float32_tolerance_from_the_modes_numbers(mode: str) -> None:
    tolerance = tolerance_for(Mode(mode), "float32")
    for text in _steps(mode):
        assert f"in {mode} mode with a {tolerance.reference_dtype} reference" in text
        assert f"{tolerance.atol:g}" in text and f"{tolerance.rtol:g}" in text
        if tolerance.norm_rtol is not None:
            assert f"||out − ref|| must be at most {tolerance.norm_rtol:g}·||ref||" in text
        assert 'input_precision="ieee"` is the exact float32 path' in text


def test_flashinfer_mode_states_the_tasks_own_tolerance_and_its_rule() -> None:
    for text in _steps("flashinfer"):
        assert "in flashinfer mode in their own dtypes, as FlashInfer-Bench's evaluator compares them" in text
        assert "by more than 0.01 and by more than 0.01·|ref|" in text
        assert 'input_precision="ieee"` is the exact float32 path' in text
    with pytest.raises(ValueError, match="declares none"):
        precision_context("flashinfer", None)


def test_strict_mode_allows_tf32x3_and_says_plain_tf32_fails() -> None:
    for text in _steps("strict"):
        assert 'input_precision="tf32x3"` runs on the tensor cores' in text and "is allowed" in text
        assert '`"tf32"`, errs near 0.0007 and fails it' in text
        assert "2e-05" in text  # strict's normwise float32 tolerance (executor/wire/_modes.py)
    for text in _steps("kernelbench"):
        assert "tf32x3" in text and "fails it" in text


def test_plain_tf32_is_said_to_pass_where_the_tolerance_admits_it() -> None:
    for text in [*_steps("paper"), *_steps("strict", allowed="tf32")]:
        assert "passes this tolerance too" in text and "fails it" not in text


def test_step_instructions_hold_no_answer_format_meant_for_a_headless_model() -> None:
    for mode in ("strict", "paper"):
        for text in _steps(mode):
            assert "Answer with" not in text and "fenced" not in text and "<old_str" not in text
            assert 'use `input_precision="ieee"` in any' not in text  # the old blanket rule is gone


def test_the_headless_answer_format_and_retry_accept_edits_or_a_whole_module() -> None:
    step = render_answer_format("edits")
    assert "complete module" in step and "<old_str_1>" in step and "<new_str_1>" in step
    assert render_answer_format("module").rstrip() == "Answer with the complete module in one fenced ```python block."
    retry = render_retry(RetryContext(problem="no edit applied", expect="edits"))
    assert "complete module" in retry and "<old_str_N>" in retry


TF32_RULE = next(rule for rule in load_starter() if rule.reproducer.name == "29_dot_fp32_tf32.py")


def test_the_starter_rule_on_fp32_dot_names_tf32x3_and_ieee() -> None:
    assert 'input_precision="tf32x3"' in TF32_RULE.text and '"ieee"' in TF32_RULE.text


@pytest.mark.anyio
async def test_the_rules_tf32x3_fix_passes_where_its_reproducer_fails(evaluator: Evaluator) -> None:
    """The rule's advice, applied to its own reproducer, passes strict mode on the backend that recorded it
    (the interpreter rounds tf32 and tf32x3 as the H200 does)."""
    code = TF32_RULE.reproducer.read_text()
    fixed = code.replace("tl.dot(a, b)", 'tl.dot(a, b, input_precision="tf32x3")')
    assert fixed != code
    result = await evaluator.evaluate(load_task(TF32_RULE.task), fixed, EvaluationOptions(backend=TF32_RULE.backend))
    assert result.status.value == "ok", result.message[:500]
