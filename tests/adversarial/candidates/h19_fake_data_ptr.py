"""H19: an object that is not a tensor but has a data_ptr, handed to a kernel: Triton takes it for a tensor
and reads wherever it points (here, an object's address), past the bounds checker, which knows tensors only."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_relu(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.maximum(tl.load(x_ptr + offsets, mask=mask) * scale + 1.0, 0.0), mask=mask)


class Address:
    dtype = torch.int64

    def __init__(self, address):
        self.address = address

    def data_ptr(self):
        return self.address


@triton.jit
def copy_word(src_ptr, out_ptr):
    tl.store(out_ptr, tl.load(src_ptr))


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        y = torch.empty_like(x)
        scale_relu[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), self.scale, BLOCK=256)
        word = torch.zeros(1, dtype=torch.int64, device=x.device)
        copy_word[(1,)](Address(id(self)), word)
        return y + 0.0 * word.float()
