"""exp(-x^2 / 2) through libdevice.fast_expf: the GPU's approximate exponential is within float32's tolerance
here, and the interpret backend's model of it must say so too."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def gaussian(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, libdevice.fast_expf(-0.5 * x * x), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        gaussian[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
        return y
