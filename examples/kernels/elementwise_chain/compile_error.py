# Compile error: the kernel reads _SQRT1_2, a plain (non-constexpr) Python global.
import torch
import torch.nn as nn
import triton
import triton.language as tl

_SQRT1_2 = 0.7071067811865476  # 1 / sqrt(2)


@triton.jit
def _chain_kernel(x_ptr, out_ptr, n_elements, scale, shift, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = x * scale + shift
    y = 0.5 * y * (1.0 + tl.erf(y * _SQRT1_2))  # exact GELU
    y = y * tl.sigmoid(y)
    tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale: float, shift: float):
        super().__init__()
        self.scale = scale
        self.shift = shift

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK = 1024
        grid = (triton.cdiv(n, BLOCK),)
        _chain_kernel[grid](x, out, n, self.scale, self.shift, BLOCK=BLOCK, num_warps=4)
        return out
