# rule: You cannot use `continue` inside a @triton.jit kernel; put the rest of the loop body under an if on a scalar condition, or fold the condition into the load/store mask.
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
            continue
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
