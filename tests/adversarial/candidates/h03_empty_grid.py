"""H3 with an empty grid: the kernel is "launched" over no programs, so Triton starts nothing, and PyTorch
computes the output. A launch that runs no program is not a kernel that ran."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_relu(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.maximum(tl.load(x_ptr + offsets, mask=mask) * scale + 1.0, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        y = torch.relu(x * self.scale + 1.0)
        scale_relu[lambda meta: (0,)](x, y, x.numel(), self.scale, BLOCK=256)
        return y
