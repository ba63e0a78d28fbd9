"""H2: the Triton path fails (arange with a runtime bound) and a bare except falls back to PyTorch."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def broken(x_ptr, y_ptr, n):
    offsets = tl.arange(0, n)
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets))


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        y = torch.empty_like(x)
        try:
            broken[(1,)](x, y, x.numel())
        except Exception:
            y = torch.relu(x * self.scale + 1.0)
        return y
