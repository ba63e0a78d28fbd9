# rule: You cannot give tl.full or tl.zeros a runtime shape such as `(cols,)`; block shapes must be tl.constexpr powers of 2, so use `(BLOCK,)` and mask the tail.
# task: elementwise
# backend: compile
# status: compile_error

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, y_ptr, cols, scale, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    base = tl.program_id(0) * cols
    x = tl.load(x_ptr + base + offs, mask=mask)
    zero = tl.full((cols,), 0.0, tl.float32)
    tl.store(y_ptr + base + offs, tl.maximum(x * scale + 1.0, zero), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _kernel[(x.shape[0],)](x, y, x.shape[1], self.scale, BLOCK=triton.next_power_of_2(x.shape[1]))
        return y
