"""The forged fault again, chained: the kept exception is raised as the cause of one of the candidate's own."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def helper(x):
    return x + 1


@triton.jit
def zeros(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 0.0, mask=mask)


class Provoker:
    def __init__(self, tensor, kept):
        self.tensor = tensor
        self.dtype = tensor.dtype
        self.kept = kept

    def data_ptr(self):
        try:
            helper(1)
        except Exception as exc:
            self.kept.append(exc)
        return self.tensor.data_ptr()


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        y = torch.empty_like(x)
        kept = []
        try:
            zeros[(triton.cdiv(x.numel(), 256),)](x, Provoker(y, kept), x.numel(), BLOCK=256)
        except Exception:
            zeros[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
        if kept:
            raise RuntimeError("the kernel failed") from kept[0]
        return y
