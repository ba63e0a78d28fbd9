"""A budget for the candidate over all its phases: a kernel that hangs is a `timeout` within the budget, before
the phase's own timeout, so that one call returns in time whatever the kernel does."""

from __future__ import annotations

import pytest

from adaexplore.executor import EvaluationOptions, Evaluator, Status
from tests.conftest import ON_GPU
from tests.executor.test_evaluator import KERNEL, TASK, variant

pytestmark = pytest.mark.anyio

HANGS = variant("    x = tl.load", "    while tl.load(x_ptr, volatile=True) < 1e30:\n        pass\n    x = tl.load")


async def test_a_hanging_kernel_is_a_timeout_within_its_budget_not_the_phase_timeout(evaluator: Evaluator) -> None:
    trial_timeout = evaluator.config.trial_timeout_s
    # On the CPU backends the budget is the worker's CPU time while the trial's timeout is wall time: a worker
    # given half a core by a loaded machine spends 0.6 of the timeout's seconds on the CPU only after it has run
    # out, so the budget there is a smaller share of it
    budget = trial_timeout * (0.6 if ON_GPU else 0.3)
    result = await evaluator.evaluate(TASK, HANGS, EvaluationOptions(candidate_budget_s=budget))
    assert result.status is Status.timeout, result.message
    # the budget ran out first (in whichever phase: on a loaded machine loading may already take it), not
    # the trial's own timeout, which is longer than the whole budget
    assert f"budget of {budget:.0f} s" in result.message, result.message
    assert "did not finish within" not in result.message
    if not ON_GPU:  # on the CPU backends the budget is the worker's CPU time, which a busy machine does not eat
        assert f"budget of {budget:.0f} s of CPU time" in result.message and "of wall time" in result.message


async def test_an_honest_kernel_within_its_budget_is_judged_as_without_one(evaluator: Evaluator) -> None:
    result = await evaluator.evaluate(TASK, KERNEL, EvaluationOptions(candidate_budget_s=120))
    assert result.status is Status.ok, result.message
