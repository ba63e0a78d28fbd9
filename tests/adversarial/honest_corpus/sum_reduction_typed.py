"""from __future__ import annotations, typing's Tuple, keyword-only arguments, x.new_empty for the output."""

# ruff: noqa: UP006, UP035  (typing's Tuple is the style under test)

from __future__ import annotations

from typing import Tuple

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _sum_dim1_kernel(x_ptr, out_ptr, R, INNER, BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr):
    b = tl.program_id(0)
    inner = tl.program_id(1) * BLOCK_I + tl.arange(0, BLOCK_I)
    acc = tl.zeros((BLOCK_I,), dtype=tl.float32)
    for r0 in range(0, R, BLOCK_R):
        r = r0 + tl.arange(0, BLOCK_R)
        mask = (r[:, None] < R) & (inner[None, :] < INNER)
        tile = tl.load(x_ptr + b * R * INNER + r[:, None] * INNER + inner[None, :], mask=mask, other=0.0)
        acc += tl.sum(tile, axis=0)
    tl.store(out_ptr + b * INNER + inner, acc, mask=inner < INNER)


def _grid(batch: int, inner: int, *, block_inner: int) -> Tuple[int, int]:
    return (batch, triton.cdiv(inner, block_inner))


def sum_over_middle(x: torch.Tensor, *, block_r: int = 32, block_inner: int = 64) -> torch.Tensor:
    batch, reduce, inner = x.shape
    out = x.new_empty((batch, 1, inner))
    _sum_dim1_kernel[_grid(batch, inner, block_inner=block_inner)](
        x, out, reduce, inner, BLOCK_R=block_r, BLOCK_I=block_inner
    )
    return out


class ModelNew(nn.Module):
    dim: int

    def __init__(self, dim: int) -> None:
        super().__init__()
        assert dim == 1, "this kernel reduces the middle dimension"
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return sum_over_middle(x.contiguous())
