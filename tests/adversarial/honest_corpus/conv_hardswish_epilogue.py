"""nn.Conv2d kept, a Triton hardswish after it, an extra_repr, and __all__ naming the public class."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

__all__ = ["ModelNew"]


@triton.jit
def _hardswish_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x * tl.minimum(tl.maximum(x + 3.0, 0.0), 6.0) / 6.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.block = 512

    def extra_repr(self) -> str:
        return f"block={self.block}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x).contiguous()
        out = torch.empty_like(y)
        n = y.numel()
        _hardswish_kernel[(triton.cdiv(n, self.block),)](y, out, n, BLOCK=self.block)
        return out
