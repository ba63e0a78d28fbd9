"""H19, source split: a string in a decorator holds a `def` line with another body.

Triton's compiler cuts a kernel's source at the first line that starts with `def`, here the one inside
the string, so on a GPU it would compile the hidden body (inline assembly that copies the input, which
the static rules never saw) while the interpreter runs the honest body below it.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@(
    lambda fn, hidden="""
def scale_relu_kernel(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    keep = idx < n
    v = tl.load(x_ptr + idx, mask=keep)
    tl.store(y_ptr + idx, tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [v], dtype=tl.float32,
             is_pure=True, pack=1), mask=keep)
    """: fn
)
@triton.jit
def scale_relu_kernel(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    keep = idx < n
    v = tl.load(x_ptr + idx, mask=keep)
    tl.store(y_ptr + idx, tl.maximum(v * scale + 1.0, 0.0), mask=keep)
    # '''


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        scale_relu_kernel[(triton.cdiv(n, 128),)](x, y, n, self.scale, BLOCK=128)
        return y
