# rule: You cannot index a block by position (`tile[i, :]`, `v[0]`); work on whole blocks, load the row you need directly, or pick values with tl.where plus tl.sum/tl.max.
# task: elementwise
# backend: compile
# status: compile_error

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, y_ptr, rows, cols, scale, BR: tl.constexpr, BC: tl.constexpr):
    r = tl.program_id(0) * BR + tl.arange(0, BR)
    c = tl.arange(0, BC)
    tile = tl.load(x_ptr + r[:, None] * cols + c[None, :], mask=(r[:, None] < rows) & (c[None, :] < cols))
    for i in tl.static_range(BR):
        row = tile[i, :]
        ri = tl.program_id(0) * BR + i
        tl.store(y_ptr + ri * cols + c, tl.maximum(row * scale + 1.0, 0.0), mask=(c < cols) & (ri < rows))


class ModelNew(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        R, C = x.shape
        _kernel[(triton.cdiv(R, 4),)](x, y, R, C, self.scale, BR=4, BC=triton.next_power_of_2(C))
        return y
