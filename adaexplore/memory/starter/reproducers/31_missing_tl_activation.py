# rule: You cannot call tl.relu, tl.tanh or tl.gelu: triton.language 3.6 has none of them; write tl.maximum(v, 0.0), use libdevice.tanh, or build gelu from tl.erf.
# task: elementwise
# backend: compile
# status: compile_error

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.relu(x * scale + 1.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _kernel[(triton.cdiv(n, 128),)](x, y, n, self.scale, BLOCK=128)
        return y
