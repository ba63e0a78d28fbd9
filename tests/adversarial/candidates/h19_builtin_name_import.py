"""H19: an import that fails on purpose binds a builtin's name in the policy's eyes only. At run time
`getattr` is still the builtin, but the static rules for getattr now look away from it, so a computed
special name reaches a function's globals."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

try:
    from typing import getattr
except ImportError:
    pass

found = getattr(torch.nn.functional.relu, "__glob" + "als__")


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
        y = torch.empty_like(x)
        scale_relu[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), self.scale, BLOCK=256)
        return y
