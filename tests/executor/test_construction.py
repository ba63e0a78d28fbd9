"""A ModelNew built on the CPU, KernelBench's way, may make tensors from Python numbers: torch imports its own
modules from C then, under the candidate's restricted import (KernelBench level 2 problem 3's pattern). On a
GPU the candidate's frame is the innermost one there; the CPU backends run the constructor under a function
mode of ours, so there the unit test in worker/test_candidate_builtins.py is the one that bites, and this one
runs on a GPU only."""

from __future__ import annotations

import pytest

from adaexplore.executor import EvaluationOptions, Evaluator, Mode, Status, task_from_source
from tests.conftest import ON_GPU

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.gpu,
    pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU: the CPU backends build ModelNew under a mode of ours"),
]

TASK = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n, sum_weight):
        super().__init__()
        self.sum_weight = nn.Parameter(torch.tensor(sum_weight))
        self.n = n

    def forward(self, x):
        return torch.relu(x + self.sum_weight)

def get_inputs():
    return [torch.randn(4096)]

def get_init_inputs():
    return [4096, 0.5]
"""

CANDIDATE = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_relu(x_ptr, w_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    w = tl.load(w_ptr)
    tl.store(y_ptr + offsets, tl.maximum(x + w, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, n, sum_weight):
        super().__init__()
        self.sum_weight = nn.Parameter(torch.tensor(sum_weight))

    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        add_relu[(triton.cdiv(n, 1024),)](x, self.sum_weight, y, n, BLOCK=1024)
        return y
"""


@pytest.mark.parametrize("mode", [Mode.kernelbench, Mode.strict])
async def test_a_parameter_made_from_a_number_in_the_constructor_is_fine(evaluator: Evaluator, mode: Mode) -> None:
    task = task_from_source(TASK, name="sum_weight")
    result = await evaluator.evaluate(task, CANDIDATE, EvaluationOptions(mode=mode))
    assert result.status is Status.ok, result.message
