"""With the static policy off: replace the method through which the interpreter runs a kernel (and through which
the evaluator tells a kernel called from host code during a compile), wrapping the original so every launch still
works. The guard watches Triton's interpreter and compiler classes as the evaluator left them."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
import triton.runtime.interpreter as interpreter

_original = interpreter.InterpretedFunction.__call__


def _call(self, *args, **kwargs):
    return _original(self, *args, **kwargs)


interpreter.InterpretedFunction.__call__ = _call


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
