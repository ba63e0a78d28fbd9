# log-softmax over rows in three kernels, one program per row each: the row max, then the row sum of exp, then the write (3 reads, 1 write), BLOCK 4096, 8 warps [family=row_multipass passes=3 block=4096 warps=8]
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _max_kernel(x_ptr, max_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = row.to(tl.int64) * N
    cols = tl.arange(0, BLOCK)
    m = tl.full((BLOCK,), float("-inf"), tl.float32)
    for c0 in range(0, N, BLOCK):
        m = tl.maximum(m, tl.load(x_ptr + base + c0 + cols, mask=c0 + cols < N, other=float("-inf")))
    tl.store(max_ptr + row, tl.max(m, axis=0))


@triton.jit
def _lse_kernel(x_ptr, max_ptr, lse_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = row.to(tl.int64) * N
    cols = tl.arange(0, BLOCK)
    row_max = tl.load(max_ptr + row)
    s = tl.zeros((BLOCK,), dtype=tl.float32)
    for c0 in range(0, N, BLOCK):
        x = tl.load(x_ptr + base + c0 + cols, mask=c0 + cols < N, other=float("-inf"))
        s += tl.exp(x - row_max)
    tl.store(lse_ptr + row, row_max + tl.log(tl.sum(s, axis=0)))


@triton.jit
def _write_kernel(x_ptr, lse_ptr, out_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = row.to(tl.int64) * N
    cols = tl.arange(0, BLOCK)
    lse = tl.load(lse_ptr + row)
    for c0 in range(0, N, BLOCK):
        ok = c0 + cols < N
        tl.store(out_ptr + base + c0 + cols, tl.load(x_ptr + base + c0 + cols, mask=ok, other=0.0) - lse, mask=ok)


class ModelNew(nn.Module):
    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        R, N = x.shape
        row_max = torch.empty((R,), device=x.device, dtype=torch.float32)
        lse = torch.empty_like(row_max)
        out = torch.empty_like(x)
        _max_kernel[(R,)](x, row_max, N, BLOCK=4096, num_warps=8)
        _lse_kernel[(R,)](x, row_max, lse, N, BLOCK=4096, num_warps=8)
        _write_kernel[(R,)](x, lse, out, N, BLOCK=4096, num_warps=8)
        return out
