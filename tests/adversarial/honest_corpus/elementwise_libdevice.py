"""libdevice's erf, a module-level tl.constexpr, and a property on the module."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice

BLOCK_SIZE = tl.constexpr(512)


@triton.jit
def _gelu_gate_kernel(x_ptr, out_ptr, n, scale, shift):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    y = tl.load(x_ptr + offs, mask=mask, other=0.0) * scale + shift
    y = 0.5 * y * (1.0 + libdevice.erf(y * 0.7071067811865476))
    tl.store(out_ptr + offs, y / (1.0 + tl.exp(-y)), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale: float, shift: float):
        super().__init__()
        self._affine = (scale, shift)

    @property
    def scale(self) -> float:
        return self._affine[0]

    @property
    def shift(self) -> float:
        return self._affine[1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        _gelu_gate_kernel[(triton.cdiv(n, 512),)](x, out, n, self.scale, self.shift)
        return out
