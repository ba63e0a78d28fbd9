"""tan(x) through libdevice.fast_tanf: exact in an interpreter that computes it with numpy, wrong on a GPU near the
poles, where the approximate sine over the approximate cosine errs by far more than float32's tolerance."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def tangent(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, libdevice.fast_tanf(tl.load(x_ptr + offsets, mask=mask)), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        tangent[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
        return y
