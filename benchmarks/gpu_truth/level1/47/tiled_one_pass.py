# Sum over a middle dim in one read: (outer, R, inner) view, each program owns 128 inner columns and loops over R in 32-row tiles, 8 warps.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_dim_kernel(x_ptr, y_ptr, R, inner, BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr):
    o = tl.program_id(0).to(tl.int64)
    ib = tl.program_id(1)
    cols = ib * BLOCK_I + tl.arange(0, BLOCK_I)
    cmask = cols < inner
    base = x_ptr + o * R * inner
    acc = tl.zeros([BLOCK_R, BLOCK_I], tl.float32)
    for start in range(0, R, BLOCK_R):
        rows = start + tl.arange(0, BLOCK_R)
        ptrs = base + rows[:, None].to(tl.int64) * inner + cols[None, :]
        mask = (rows[:, None] < R) & cmask[None, :]
        acc += tl.load(ptrs, mask=mask, other=0.0).to(tl.float32)
    out = tl.sum(acc, axis=0)
    tl.store(y_ptr + o * inner + cols, out, mask=cmask)


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
        BLOCK_I = 128
        BLOCK_R = 32
        grid = (outer, triton.cdiv(inner, BLOCK_I))
        sum_dim_kernel[grid](x, y, R, inner, BLOCK_R=BLOCK_R, BLOCK_I=BLOCK_I, num_warps=8)
        return y
