"""Checks of the ninth round in the worker itself: what a forward may return, and whose fault a failure is."""

from __future__ import annotations

import pytest
import torch

from adaexplore.domain import Status
from adaexplore.executor.worker.confine._errors import classify
from adaexplore.executor.worker.confine._faults import CandidateFault, DisguisedOutput, OutputNotTensors
from adaexplore.executor.worker.task._taskrun import flatten_output, own_attributes
from adaexplore.executor.worker.timing._kept import kept_copy


class Lazy(tuple):  # type: ignore[type-arg]
    iterated = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        Lazy.iterated += 1
        return super().__iter__()


def test_only_plain_tensors_tuples_and_lists_are_outputs_and_nothing_else_is_iterated() -> None:
    x = torch.ones(3)
    assert flatten_output(x) == [x]
    assert flatten_output((x, x)) == [x, x] and flatten_output([x]) == [x]
    assert len(flatten_output(torch.max(torch.ones(2, 3), dim=1))) == 2  # torch's own named tuple
    Lazy.iterated = 0
    for value in [Lazy((x,)), (Lazy((x,)),), [x, Lazy((x,))]]:
        with pytest.raises(DisguisedOutput, match="You cannot return a Lazy"):
            flatten_output(value)
    assert Lazy.iterated == 0
    for value, name in [(None, "NoneType"), (3.0, "float"), ((x, 1), "int"), ({"y": x}, "dict")]:
        with pytest.raises(OutputNotTensors, match=f"forward must return a torch.Tensor .*not {name}"):
            flatten_output(value)
    with pytest.raises(OutputNotTensors, match="not an empty tuple"):
        flatten_output(())
    # the kept outputs of timed calls are read the same way
    with pytest.raises(DisguisedOutput):
        kept_copy(Lazy((x,)), None)
    assert Lazy.iterated == 0


def raised(statement: str, module: str = "tests_caller", **names: object) -> BaseException:
    """The exception `statement` raises when it runs in code whose module is `module` (the candidate's is
    adaexplore_candidate)."""
    scope = {"__name__": module, "torch": torch, "own_attributes": own_attributes, **names}
    exec(f"def run():\n    {statement}\n", scope)
    with pytest.raises(Exception) as info:
        scope["run"]()  # type: ignore[operator]
    return info.value


def test_a_failure_that_starts_in_the_evaluators_code_is_its_own() -> None:
    # raised inside an evaluator function that Triton or torch called, not the candidate
    inside = raised("own_attributes(5)")
    assert classify(inside) is Status.infra_error
    # a call that does not fit one of the evaluator's functions fails before that function starts
    bad_call = raised("own_attributes(torch.ones(1), 'extra')")
    assert classify(bad_call) is Status.infra_error
    # the same, wrapped by the interpreter or the compiler, is still the evaluator's
    try:
        raise RuntimeError("wrapper") from inside
    except RuntimeError as wrapper:
        assert classify(wrapper) is Status.infra_error


def test_the_candidate_cannot_pass_its_own_mistakes_off_as_the_evaluators() -> None:
    # the candidate's own code calling into the evaluator wrongly
    for statement in ["own_attributes(5)", "own_attributes(torch.ones(1), 'extra')"]:
        assert classify(raised(statement, module="adaexplore_candidate")) is Status.runtime_error
    # the evaluator's checks of the candidate are never its own fault, wherever they are raised

    class Refusal(CandidateFault, RuntimeError):
        pass

    def refuse() -> None:
        own_attributes(torch.ones(1))
        raise Refusal("You cannot do that")

    assert classify(raised("refuse()", refuse=refuse)) is Status.runtime_error
    # an error of torch's, raised through the CUDA-on-CPU mode every torch call passes through
    from adaexplore.executor.worker.cpu._cuda_on_cpu import cuda_on_cpu

    with cuda_on_cpu():
        error = raised("torch.ones(2, 3) @ torch.ones(2, 3)", module="adaexplore_candidate")
    assert classify(error) is Status.runtime_error


# The evaluator's code and the candidate's, as modules of those names: a stand-in that fails, and candidate
# code that calls it, lets its failure through, or catches it to raise it again later.
OURS = """
from adaexplore.executor.worker.confine._faults import EvaluatorFault

def stand_in():
    raise EvaluatorFault("the stand-in failed")

def exhausted():
    raise MemoryError("no room for the stand-in's arrays")
"""
CANDIDATE = """
kept = []

def calls(fn):
    return fn()

def through_a_generator(fn):
    return sum(fn() for _ in range(1))

def keeps(fn):
    try:
        fn()
    except Exception as exc:
        kept.append(exc)

def raises_kept():
    raise kept[-1]

def raises_from_kept():
    raise RuntimeError("the kernel failed") from kept[-1]

def builds(cls):
    raise cls("a fault of its own making")
"""


def _module(source: str, name: str) -> dict[str, object]:
    scope: dict[str, object] = {"__name__": name}
    exec(source, scope)
    return scope


def _caught(fn, *args) -> BaseException:  # type: ignore[no-untyped-def]
    with pytest.raises(BaseException) as info:
        fn(*args)
    return info.value


def test_the_evaluators_fault_is_its_own_only_as_it_happened() -> None:
    from adaexplore.executor.worker.confine._errors import evaluator_fault, kept_by_candidate
    from adaexplore.executor.worker.confine._faults import EvaluatorFault

    ours = _module(OURS, "adaexplore.executor.worker._fake_stand_in")
    candidate = _module(CANDIDATE, "adaexplore_candidate")
    # through the candidate's code, as a launch from its forward runs the stand-in: the evaluator's
    for route in (candidate["calls"], candidate["through_a_generator"]):
        fault = _caught(route, ours["stand_in"])
        assert classify(fault) is Status.infra_error and evaluator_fault(fault) == "one of its stand-ins"
    # kept by the candidate and raised again later, or chained to one of its own: the candidate's
    candidate["keeps"](ours["stand_in"])  # type: ignore[operator]
    for later in (candidate["raises_kept"], candidate["raises_from_kept"]):
        forged = _caught(later)
        assert classify(forged) is Status.runtime_error and evaluator_fault(forged) is None
        assert kept_by_candidate(forged)
    # one it builds of the evaluator's class: the candidate's
    built = _caught(candidate["builds"], EvaluatorFault)
    assert classify(built) is Status.runtime_error and not kept_by_candidate(built)
    # the candidate's own limits running out inside the evaluator's code: the candidate's
    exhausted = _caught(candidate["calls"], ours["exhausted"])
    assert classify(exhausted) is Status.runtime_error and evaluator_fault(exhausted) is None
