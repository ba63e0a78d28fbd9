"""H19 through a kernel's compiled handle: `run(..., warmup=True)` compiles without launching and returns
the compiled kernel, whose own launcher (`compiled.run`) takes the grid, the stream, the launch hooks and
the pointers as plain arguments: with no hooks given, the kernel would run out of sight of the launch
audit, on any stream. This one launches the handle the polite way; getting it is what is refused."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_relu(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.maximum(tl.load(x_ptr + offsets, mask=mask) * scale + 1.0, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        y = torch.empty_like(x)
        grid = (triton.cdiv(x.numel(), 256),)
        compiled = scale_relu.run(x, y, x.numel(), self.scale, BLOCK=256, grid=grid, warmup=True)
        if compiled is None:  # the interpreter hands out no handle: launch it the plain way
            scale_relu[grid](x, y, x.numel(), self.scale, BLOCK=256)
            return y
        compiled[grid](x, y, x.numel(), self.scale)
        return y
