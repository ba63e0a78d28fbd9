"""H10 through a list: the inputs arrive inside one list argument; write the result over the first of them
and return it, which both modifies an input and returns it."""

import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def axpby_in_place(x_ptr, y_ptr, n, a, b, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(x_ptr + offsets, x * a + y * b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, pair, a, b):
        x, y = pair
        axpby_in_place[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), a, b, BLOCK=256)
        return x
