# rule: You cannot use a tl.arange (or block shape) whose length is not a power of 2, e.g. `tl.arange(0, 100)`; round up with triton.next_power_of_2 and mask the extra lanes.
# task: elementwise
# backend: compile
# status: compile_error

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, y_ptr, cols, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * cols + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, tl.maximum(x * scale + 1.0, 0.0))


class ModelNew(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _kernel[(x.shape[0],)](x, y, x.shape[1], self.scale, BLOCK=x.shape[1])
        return y
