# rule: You cannot call tl.program_id with an axis above 2: a launch grid has at most 3 axes (0, 1, 2); fold extra dimensions into one axis and split it with // and %.
# task: elementwise
# backend: compile
# status: compile_error

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, y_ptr, rows, cols, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.program_id(3) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask)
    tl.store(y_ptr + row * cols + offs, tl.maximum(x * scale + 1.0, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        R, C = x.shape
        _kernel[(R, 1, 1)](x, y, R, C, self.scale, BLOCK=triton.next_power_of_2(C))
        return y
