"""H19: format fields read attributes and items by name ("{0.__globals__}"), printing a function's namespace."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_relu(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.maximum(tl.load(x_ptr + offsets, mask=mask) * scale + 1.0, 0.0), mask=mask)


LEAK = "{0.__globals__}".format(torch.nn.functional.relu)  # noqa: UP030, UP032


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        y = torch.empty_like(x)
        scale_relu[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), self.scale, BLOCK=256)
        return y
