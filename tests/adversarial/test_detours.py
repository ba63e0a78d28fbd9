"""Method detours (research round H20): a method of the candidate's own class, read through the class, takes
any object as self, which the rules trust as the candidate's own; called with Triton's objects it reaches their
private methods (a kernel's source swapped after the policy read it, the interpreter's exec). Each comes back
rejected, with the reason; the honest idioms around classes still pass."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adaexplore.executor import Evaluator, Status, load_task
from tests.conftest import fast_settings

HERE = Path(__file__).parent
CANDIDATES = HERE / "candidates"
SCALE_RELU = load_task(HERE.parent / "executor" / "data" / "scale_relu_task.py")

pytestmark = pytest.mark.anyio

# (candidate, a fragment of the message that names the reason)
DETOURS = [
    ("h20_unsafe_update_src", "You cannot read the method swap through Helper"),
    ("h20_interpreter_rewriter", "You cannot read the method run through Runner"),
    ("h20_getattr_detour", "You cannot read the method swap through Helper"),
    ("h20_type_detour", "You cannot read the method swap through type(...)"),
    ("h20_autograd_forward_detour", "You cannot read the method forward through Patch"),
    # the class may reach the module's own function; the method read through the parameter that holds it may not
    ("h20_class_value_detour", "You cannot read the method swap through kind, which may hold the class Helper"),
    ("h20_decorator_detour", "You cannot decorate the method swap with keep"),
    ("h20_staticmethod_self", "You cannot name the first parameter of the static method swap self"),
    ("h20_super_classmethod", "You cannot read the method swap through super() outside a plain method"),
]


@pytest.fixture(scope="module")
async def timed_evaluator(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Evaluator]:
    settings = fast_settings(tmp_path_factory.mktemp("detours"), time_on_cpu=True, min_reps=12, timing_budget_ms=50.0)
    async with Evaluator(settings) as evaluator:
        yield evaluator


@pytest.mark.parametrize(("name", "reason"), DETOURS, ids=[d[0] for d in DETOURS])
async def test_each_detour_is_rejected(timed_evaluator: Evaluator, name: str, reason: str) -> None:
    result = await timed_evaluator.evaluate(SCALE_RELU, (CANDIDATES / f"{name}.py").read_text())
    assert result.status is Status.rejected, result.message
    assert reason in result.message, result.message
    assert (
        "call the method on an instance of your class" in result.message
        or "apply" in result.message
        or ("Rename it" in result.message or "call your helper inside the method" in result.message)
    )
    assert result.timing is None


async def test_a_detour_out_of_sight_of_the_static_rules_is_refused_when_it_runs(timed_evaluator: Evaluator) -> None:
    # the class comes out of a list: the worker's check of self at run time refuses the private read on import
    result = await timed_evaluator.evaluate(SCALE_RELU, (CANDIDATES / "h20_runtime_detour.py").read_text())
    assert result.status is Status.rejected, result.message
    assert (
        "You cannot use ._unsafe_update_src of a JITFunction object through a method's first parameter"
        in (result.message)
        or "of a InterpretedFunction object through a method's first parameter" in result.message
    ), result.message
    assert "call the method on an instance of your class" in result.message


async def test_the_honest_class_idioms_pass(timed_evaluator: Evaluator) -> None:
    result = await timed_evaluator.evaluate(SCALE_RELU, (CANDIDATES / "h20_honest_idioms.py").read_text())
    assert result.status is Status.ok, result.message
    assert result.timing is not None and result.correctness is not None
