"""A budget for the candidate over all its phases: a kernel that hangs is a `timeout` within the budget, before
the phase's own timeout, whichever phase it hangs in, and the verdict says where it was; the Triton compiler's
time is not the candidate's."""

from __future__ import annotations

import time

import pytest

from adaexplore.executor import EvaluationOptions, Evaluator, Status
from tests.conftest import ON_GPU
from tests.executor.test_evaluator import KERNEL, TASK, variant

pytestmark = pytest.mark.anyio

SPIN = "    while tl.load(x_ptr, volatile=True) < 1e30:\n        pass\n"
HANGS = variant("    x = tl.load", SPIN + "    x = tl.load")
# a Python loop in forward, which the sm_90 compile check (without a GPU) runs first: it had the load timeout
FORWARD_HANGS = variant(
    "        y = torch.empty_like(x)", "        while x.numel() > 0:\n            pass\n        y = torch.empty_like(x)"
)
# sixteen configs, each compiled for sm_90 at the small sizes and at the full ones: more CPU time than the budget
# (eight took 1.5-1.9 s once a worker's compiles stopped importing torch._dynamo and hashing Triton's files)
AUTOTUNED = variant(
    "@triton.jit",
    '@triton.autotune(configs=[triton.Config({"BLOCK": b}, num_warps=w) for b in (64, 128, 256, 512) for w in '
    '(1, 2, 4, 8)], key=["n"])\n@triton.jit',
).replace(
    "scale_relu_kernel[(triton.cdiv(n, 256),)](x, y, n, self.scale, BLOCK=256)",
    'scale_relu_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n, self.scale)',
)


def _line(code: str, text: str) -> int:
    return next(i for i, line in enumerate(code.splitlines(), 1) if text in line)


async def test_a_python_loop_in_forward_is_a_timeout_within_the_budget_naming_its_line(evaluator: Evaluator) -> None:
    budget = 6.0
    began = time.monotonic()
    result = await evaluator.evaluate(TASK, FORWARD_HANGS, EvaluationOptions(candidate_budget_s=budget))
    assert result.status is Status.timeout, result.message
    if not ON_GPU:  # a client waits: the answer comes within the budget counted from the call's start, unless its
        # worker's start took more than half of it (then the candidate's phases still get half)
        assert time.monotonic() - began < max(budget, result.phases["handover"] + budget / 2) + 2.0, result.phases
    assert f"budget of {budget:.0f} s" in result.message and "did not finish within" not in result.message
    # where it was: the loop's line (its test or its body), in forward
    lines = [_line(FORWARD_HANGS, "while x.numel()"), _line(FORWARD_HANGS, "while x.numel()") + 1]
    assert any(f"at line {n} of the candidate, in forward" in result.message for n in lines), result.message
    if not ON_GPU:  # the compile check runs forward first, charged to the budget like the trials
        assert result.message.startswith("the compile check"), result.message


async def test_a_hanging_kernel_is_a_timeout_within_its_cpu_budget_naming_the_kernel(evaluator: Evaluator) -> None:
    # no client waits (a headless search's step): the budget is the worker's CPU time alone on the CPU backends,
    # which a busy machine does not spend, and it runs out before the trial's own timeout of 10 s of wall time (a
    # worker given a quarter of a core by a loaded machine still spends 2 s of CPU in it)
    budget = 2.0
    options = EvaluationOptions(candidate_budget_s=budget, candidate_budget_wall=False)
    result = await evaluator.evaluate(TASK, HANGS, options)
    assert result.status is Status.timeout, result.message
    assert f"budget of {budget:.0f} s" in result.message and "did not finish within" not in result.message
    if not ON_GPU:
        assert f"budget of {budget:.0f} s of CPU time" in result.message and "of wall time" in result.message
        spin = _line(HANGS, "while tl.load")
        assert f"in the Triton kernel scale_relu_kernel, at line {spin} of the candidate" in result.message
        assert result.message.startswith("trial 1 of"), result.message


@pytest.mark.skipif(ON_GPU, reason="on a GPU the budget is wall time over every phase, compiles included")
async def test_the_compilers_time_is_not_charged_to_the_candidate(evaluator: Evaluator) -> None:
    result = await evaluator.evaluate(
        TASK, AUTOTUNED, EvaluationOptions(candidate_budget_s=1.0, candidate_budget_wall=False)
    )
    assert result.status is Status.ok, result.message
    assert result.phases["compile"] > 1.0  # the compiles alone took longer than the whole budget


async def test_an_honest_kernel_within_its_budget_is_judged_as_without_one(evaluator: Evaluator) -> None:
    result = await evaluator.evaluate(TASK, KERNEL, EvaluationOptions(candidate_budget_s=120))
    assert result.status is Status.ok, result.message


def test_a_waiting_clients_budget_counts_from_the_calls_start_and_leaves_the_candidate_half() -> None:
    from adaexplore.executor.pipeline.stages.budget import wall_left

    # 40 s from the call's start, 2 s kept for the answer: 10 s went before the candidate, 5 s to it
    assert wall_left(40.0, call_wall=15.0, own_wall=5.0) == 23.0
    # a worker that took 30 s to start: the candidate's own phases still get 20 s
    assert wall_left(40.0, call_wall=35.0, own_wall=5.0) == 15.0
    # a small budget keeps a twentieth of itself for the answer
    assert wall_left(6.0, call_wall=1.0, own_wall=1.0) == 6.0 - 0.3 - 1.0
