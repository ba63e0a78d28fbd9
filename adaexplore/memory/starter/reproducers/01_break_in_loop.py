# rule: You cannot use `break` inside a @triton.jit kernel; give the loop a fixed trip count with range() and mask the body (or guard it with an if on a scalar) instead.
# task: elementwise
# backend: compile
# status: compile_error

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr, ITERS: tl.constexpr):
    for i in range(ITERS):
        start = (tl.program_id(0) * ITERS + i) * BLOCK
        if start >= n:
            break
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(y_ptr + offs, tl.maximum(x * scale + 1.0, 0.0), mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _kernel[(triton.cdiv(n, 4 * 128),)](x, y, n, self.scale, BLOCK=128, ITERS=4)
        return y
