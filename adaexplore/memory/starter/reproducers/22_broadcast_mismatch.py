# rule: You cannot combine blocks of incompatible shapes, e.g. `(r < rows) & (c < cols)` with r (BR,) and c (BC,); index as r[:, None] and c[None, :] so they broadcast to 2-D.
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
    mask = (r < rows) & (c < cols)
    offs = r[:, None] * cols + c[None, :]
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x * scale + 1.0, 0.0), mask=mask)


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
