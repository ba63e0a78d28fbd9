"""Correct outputs, but once it is timed it also writes into its input (a later call, or the reference, would
see another input)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_relu(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.maximum(tl.load(x_ptr + offsets, mask=mask) * scale + 1.0, 0.0), mask=mask)


def launch(x, scale):
    y = torch.empty_like(x)
    scale_relu[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), scale, BLOCK=256)
    return y


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        y = launch(x, self.scale)
        if self.calls > 8:
            x.mul_(0.5)
        return y
