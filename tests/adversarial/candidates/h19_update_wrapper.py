"""H19: functools.update_wrapper calls the real getattr and setattr with the names it is given: here it writes
an attribute onto a torch function."""

import functools

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_relu(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.maximum(tl.load(x_ptr + offsets, mask=mask) * scale + 1.0, 0.0), mask=mask)


def marker():
    pass


marker.patched_by_candidate = True
functools.update_wrapper(torch.nn.functional.relu, marker, assigned=("patched_by_candidate",), updated=())


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        y = torch.empty_like(x)
        scale_relu[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), self.scale, BLOCK=256)
        return y
