"""A broken kernel that keeps what the interpret backend raises for a libdevice function it cannot run (a
limitation of the backend, not the candidate's fault, when it surfaces as it happened) and raises it after
computing zeros: the failure must stay the candidate's."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def bits(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    count = libdevice.popc(tl.load(x_ptr + offsets, mask=mask).to(tl.int32))
    tl.store(y_ptr + offsets, count.to(tl.float32), mask=mask)


@triton.jit
def zeros(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 0.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        y = torch.empty_like(x)
        kept = None
        try:
            bits[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
        except Exception as exc:
            kept = exc
        zeros[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
        if kept is not None:
            raise kept
        return y
