"""The worker's run-time half of the rule on trusted roots: a candidate imported with candidate_builtins has
each use of self, cls or ctx that the policy allows only on its own objects (private attributes, setting
attributes) checked against the object the method was really called with."""

from __future__ import annotations

import inspect
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import torch

from adaexplore.executor.policy import ALLOWED_IMPORTS
from adaexplore.executor.worker.confine._importing import candidate_builtins, import_file

SOURCE = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


class Helper:
    def __init__(self):
        self._secret = 3

    def read(self):
        return self._secret

    def put(self, value):
        self.value = value
        return self

    def closure(self):
        return lambda: self._secret

    def launcher(self):
        return self.warmup

    def probe(self):
        return hasattr(self, "_secret")

    @classmethod
    def make(cls):
        cls._made = True
        return cls()


class Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx._factor = 2
        ctx.kept = 1
        return x * ctx._factor

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx._factor


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._helper = Helper.make()

    def forward(self, x):
        return Twice.apply(x) + self._helper.read()


# the class out of a container: no static rule sees that it is a class
HIDDEN = [type(Helper())][0]
"""


@pytest.fixture
def module(tmp_path: Path) -> Iterator[ModuleType]:
    path = tmp_path / "reach_probe.py"
    path.write_text(SOURCE)
    try:
        yield import_file("reach_probe", path, builtins=candidate_builtins(ALLOWED_IMPORTS))
    finally:
        sys.modules.pop("reach_probe", None)


def test_own_objects_keep_their_private_attributes(module: ModuleType) -> None:
    model = module.ModelNew()
    x = torch.ones(3, requires_grad=True)
    y = model(x)
    y.sum().backward()
    assert y.tolist() == [5.0, 5.0, 5.0] and x.grad is not None and x.grad.tolist() == [2.0, 2.0, 2.0]
    helper = module.Helper()
    assert helper.read() == 3 and helper.put(4).value == 4 and helper.closure()() == 3 and helper.probe()
    assert module.Helper._made is True
    # a class of the candidate's own is its own object too (cls in a classmethod)
    assert module.HIDDEN.put(module.Helper, 5) is module.Helper and module.Helper.value == 5


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda m: m.HIDDEN.read(torch.nn.Linear(1, 1)), "_secret"),
        (lambda m: m.HIDDEN.put(torch.relu, 1), "value"),
        (lambda m: m.HIDDEN.put(torch.nn.Linear, 1), "value"),
        (lambda m: m.HIDDEN.closure(m.kernel)(), "_secret"),
        (lambda m: m.HIDDEN.launcher(m.kernel), "warmup"),
        (lambda m: m.HIDDEN.probe(torch.nn.Linear(1, 1)), "_secret"),
        (lambda m: m.Twice.forward(torch.nn.Linear(1, 1), torch.ones(1)), "_factor"),
    ],
)
def test_a_method_called_with_another_object_is_refused_at_run_time(module: ModuleType, call, name: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(AttributeError) as caught:
        call(module)
    message = str(caught.value)
    assert f"You cannot use .{name} of a " in message
    assert "call the method on an instance of your class" in message


def test_the_rewrite_keeps_lines_sources_and_kernels(module: ModuleType) -> None:
    lines = SOURCE.splitlines()
    with pytest.raises(AttributeError) as caught:
        module.HIDDEN.read(object())
    frame = traceback.extract_tb(caught.value.__traceback__)[-2]  # the last one is the check's own
    assert frame.filename.endswith("reach_probe.py") and lines[frame.lineno - 1].strip() == "return self._secret"
    assert inspect.getsource(module.Helper.read).strip().startswith("def read(self):")
    # Triton reads the kernel from the file, as written
    assert "tl.store(x_ptr + offs" in module.kernel.src and "__adaexplore" not in module.kernel.src


def test_without_candidate_builtins_nothing_is_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "plain_probe.py"
    path.write_text(SOURCE)
    try:
        plain = import_file("plain_probe", path)
    finally:
        sys.modules.pop("plain_probe", None)
    other = type("Other", (), {"_secret": 7})()
    assert plain.HIDDEN.read(other) == 7
