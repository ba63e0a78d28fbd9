"""H3 in the open: a Triton kernel that does nothing is launched in every forward, and PyTorch computes the
output (a GEMM, done over and over, so that the kernel's share of the time is plainly tiny). Strict mode
allows PyTorch beside the kernels, so this passes; on a GPU the result says that the candidate's kernels
hold almost none of the time."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def nothing(x_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.load(x_ptr + offsets, mask=offsets < 0)


class ModelNew(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(k, n))

    def forward(self, x):
        nothing[(1,)](x, BLOCK=16)
        y = x @ self.weight
        for _ in range(20):
            y = x @ self.weight
        return y
