# Out of bounds: every load is shifted by 2**36 elements (int64 offsets), far past the end of the input.
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _sum_dim_kernel(x_ptr, out_ptr, n_reduce, n_inner, BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr):
    # x is viewed as (outer, reduce, inner); each program sums one (outer, inner-block) column strip.
    pid_outer = tl.program_id(0)
    pid_inner = tl.program_id(1)
    inner = pid_inner * BLOCK_I + tl.arange(0, BLOCK_I)
    inner_mask = inner < n_inner
    base = x_ptr + pid_outer.to(tl.int64) * n_reduce * n_inner
    acc = tl.zeros((BLOCK_I,), dtype=tl.float32)
    for r0 in range(0, n_reduce, BLOCK_R):
        r = r0 + tl.arange(0, BLOCK_R)
        mask = (r[:, None] < n_reduce) & inner_mask[None, :]
        tile = tl.load(base + (r[:, None] * n_inner + inner[None, :]).to(tl.int64) + (1 << 36), mask=mask, other=0.0)
        acc += tl.sum(tile, axis=0)
    tl.store(out_ptr + pid_outer * n_inner + inner, acc, mask=inner_mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        dim = self.dim % x.dim()
        n_outer = math.prod(x.shape[:dim])
        n_reduce = x.shape[dim]
        n_inner = math.prod(x.shape[dim + 1 :])
        out_shape = list(x.shape)
        out_shape[dim] = 1
        out = torch.empty(out_shape, dtype=x.dtype, device=x.device)
        BLOCK_R, BLOCK_I = 64, 64
        grid = (n_outer, triton.cdiv(n_inner, BLOCK_I))
        _sum_dim_kernel[grid](x, out, n_reduce, n_inner, BLOCK_R=BLOCK_R, BLOCK_I=BLOCK_I, num_warps=4)
        return out
