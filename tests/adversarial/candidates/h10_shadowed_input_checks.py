"""H10/H11: forward writes into its input and returns it, then shadows the input's `untyped_storage` (an
empty storage: no aliasing seen) and `contiguous` (a pristine copy: no change seen)."""

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
        pristine = x.clone()
        scale_relu[(triton.cdiv(x.numel(), 256),)](x, x, x.numel(), self.scale, BLOCK=256)
        empty = torch.empty(0).untyped_storage()
        x.untyped_storage = lambda: empty
        x.contiguous = lambda: pristine
        return x
