# Sum over a middle dim in two kernels: R split into 16 slices whose partial sums go to a global buffer, then a second kernel adds the slices.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def partial_sum_kernel(x_ptr, part_ptr, R, inner, rows_per_split, n_split,
                       BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr):
    o = tl.program_id(0).to(tl.int64)
    ib = tl.program_id(1)
    sp = tl.program_id(2)
    cols = ib * BLOCK_I + tl.arange(0, BLOCK_I)
    cmask = cols < inner
    base = x_ptr + o * R * inner
    r0 = sp * rows_per_split
    r1 = tl.minimum(r0 + rows_per_split, R)
    acc = tl.zeros([BLOCK_R, BLOCK_I], tl.float32)
    for start in range(r0, r1, BLOCK_R):
        rows = start + tl.arange(0, BLOCK_R)
        ptrs = base + rows[:, None].to(tl.int64) * inner + cols[None, :]
        mask = (rows[:, None] < r1) & cmask[None, :]
        acc += tl.load(ptrs, mask=mask, other=0.0).to(tl.float32)
    tl.store(part_ptr + (o * n_split + sp) * inner + cols, tl.sum(acc, axis=0), mask=cmask)


@triton.jit
def combine_kernel(part_ptr, y_ptr, inner, n_split, BLOCK_S: tl.constexpr, BLOCK_I: tl.constexpr):
    o = tl.program_id(0).to(tl.int64)
    ib = tl.program_id(1)
    cols = ib * BLOCK_I + tl.arange(0, BLOCK_I)
    cmask = cols < inner
    s = tl.arange(0, BLOCK_S)
    ptrs = part_ptr + (o * n_split + s[:, None]) * inner + cols[None, :]
    p = tl.load(ptrs, mask=(s[:, None] < n_split) & cmask[None, :], other=0.0)
    tl.store(y_ptr + o * inner + cols, tl.sum(p, axis=0), mask=cmask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        d = self.dim % x.dim()
        shape = list(x.shape)
        R = shape[d]
        outer = 1
        for s in shape[:d]:
            outer *= s
        inner = 1
        for s in shape[d + 1:]:
            inner *= s
        out_shape = shape[:d] + [1] + shape[d + 1:]
        y = torch.empty(out_shape, device=x.device, dtype=x.dtype)
        n_split = min(16, R)
        rows_per_split = triton.cdiv(R, n_split)
        n_split = triton.cdiv(R, rows_per_split)
        part = torch.empty((outer, n_split, inner), device=x.device, dtype=torch.float32)
        BLOCK_I = 128
        BLOCK_R = 32
        grid = (outer, triton.cdiv(inner, BLOCK_I), n_split)
        partial_sum_kernel[grid](x, part, R, inner, rows_per_split, n_split,
                                 BLOCK_R=BLOCK_R, BLOCK_I=BLOCK_I, num_warps=8)
        BLOCK_S = triton.next_power_of_2(n_split)
        combine_kernel[(outer, triton.cdiv(inner, 256))](part, y, inner, n_split,
                                                         BLOCK_S=BLOCK_S, BLOCK_I=256, num_warps=4)
        return y
