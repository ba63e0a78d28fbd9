"""The worker's dispatch modes (the work record's and the coverage walk's) are called as they are written: torch
would wrap each one's `__torch_dispatch__` in `torch._disable_dynamo`, whose first call imports torch._dynamo
(about a second of CPU, in every worker whose compile pass runs at the task's full sizes)."""

from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from adaexplore.executor.worker.cost._work_record import OpRecorder
from adaexplore.executor.worker.coverage._coverage import _Watch


@pytest.mark.parametrize("mode", [OpRecorder, _Watch])
def test_a_dispatch_mode_of_ours_is_not_wrapped_for_dynamo(mode: type[TorchDispatchMode]) -> None:
    own = mode.__dict__["__torch_dispatch__"]
    assert not hasattr(own, "__wrapped__"), f"{mode.__name__}.__torch_dispatch__ is wrapped: {own!r}"

    # what torch does to a mode that does not say so
    class Plain(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            return func(*args, **(kwargs or {}))

    assert hasattr(Plain.__dict__["__torch_dispatch__"], "__wrapped__")
    steps: list[object] = []
    with OpRecorder(steps):
        torch.ones(2) + 1
    assert steps  # still records
