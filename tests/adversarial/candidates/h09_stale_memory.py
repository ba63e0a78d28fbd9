"""H9: return uninitialized memory, hoping it still holds the reference's result; a token kernel runs."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def touch(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr))


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        y = torch.empty_like(x)
        touch[(1,)](y)
        return y
