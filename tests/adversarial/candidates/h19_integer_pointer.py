"""H19: a kernel turns an object's address (id) into a pointer and reads the worker's memory through it."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_relu(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.maximum(tl.load(x_ptr + offsets, mask=mask) * scale + 1.0, 0.0), mask=mask)


@triton.jit
def peek(address, out_ptr):
    word = tl.load(address.to(tl.pointer_type(tl.int64)))
    tl.store(out_ptr, word)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        y = torch.empty_like(x)
        scale_relu[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), self.scale, BLOCK=256)
        word = torch.zeros(1, dtype=torch.int64, device=x.device)
        peek[(1,)](id(self), word)
        return y + 0.0 * word.float()
