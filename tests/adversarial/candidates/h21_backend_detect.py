"""H21: the kernel takes one code path where it is compiled (the compile check) and another where the interpreter
runs it; the second uses a construct the GPU's compiler refuses (`break`)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_relu(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr, INTERPRETED: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    if INTERPRETED:
        for _ in range(4):
            break
    tl.store(y_ptr + offsets, tl.maximum(x * scale + 1.0, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        y = torch.empty_like(x)
        interpreted = not hasattr(scale_relu, "is_gluon")  # a JITFunction has it, an InterpretedFunction not
        scale_relu[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), self.scale, BLOCK=256, INTERPRETED=interpreted)
        return y
