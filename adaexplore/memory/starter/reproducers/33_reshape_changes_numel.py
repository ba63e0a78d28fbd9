# rule: You cannot tl.reshape a block into a shape with a different number of elements (e.g. 128 into (4, 64)); the product of the new shape must equal the block's size.
# task: elementwise
# backend: compile
# status: compile_error

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr, BR: tl.constexpr, BC: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.reshape(tl.load(x_ptr + offs, mask=mask), (BR, BC))
    out = tl.maximum(x * scale + 1.0, 0.0)
    tl.store(y_ptr + offs, tl.reshape(out, (BLOCK,)), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _kernel[(triton.cdiv(n, 128),)](x, y, n, self.scale, BLOCK=128, BR=4, BC=64)
        return y
