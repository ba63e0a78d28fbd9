"""H20: right in the correctness trials and in nine timed calls of ten, wrong in every tenth: a checker that
looks again at only a few fixed timed calls rarely lands on a wrong one. The rechecks are chosen at random as
each call returns, 44 of them, so a kernel like this is caught with probability above 0.99."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

_STATE = {"calls": 0}


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
        _STATE["calls"] += 1
        y = torch.empty_like(x)
        # every tenth call after the trials skips the second half of the output
        n = x.numel() // 2 if _STATE["calls"] > 8 and _STATE["calls"] % 10 == 0 else x.numel()
        scale_relu[(triton.cdiv(n, 256),)](x, y, n, self.scale, BLOCK=256)
        return y
