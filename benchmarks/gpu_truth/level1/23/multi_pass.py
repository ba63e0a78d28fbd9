# Softmax over rows as three kernels: row max, then row sum of exp, then an elementwise normalize; intermediates in global memory (3 reads, 1 write).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_max_kernel(x_ptr, max_ptr, n_cols, stride_x, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    cols = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + cols
        x = tl.load(x_row + offs, mask=offs < n_cols, other=-float("inf")).to(tl.float32)
        m = tl.maximum(m, x)
    tl.store(max_ptr + row, tl.max(m, axis=0))


@triton.jit
def row_sumexp_kernel(x_ptr, max_ptr, sum_ptr, n_cols, stride_x, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    cols = tl.arange(0, BLOCK)
    row_max = tl.load(max_ptr + row)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + cols
        x = tl.load(x_row + offs, mask=offs < n_cols, other=-float("inf")).to(tl.float32)
        s += tl.exp(x - row_max)
    tl.store(sum_ptr + row, tl.sum(s, axis=0))


@triton.jit
def normalize_kernel(x_ptr, max_ptr, sum_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    blk = tl.program_id(1)
    offs = blk * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_cols
    row_max = tl.load(max_ptr + row)
    inv = 1.0 / tl.load(sum_ptr + row)
    x = tl.load(x_ptr + row * stride_x + offs, mask=mask, other=0.0).to(tl.float32)
    y = tl.exp(x - row_max) * inv
    tl.store(y_ptr + row * stride_y + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        row_max = torch.empty(n_rows, device=x.device, dtype=torch.float32)
        row_sum = torch.empty(n_rows, device=x.device, dtype=torch.float32)
        RBLOCK = min(4096, triton.next_power_of_2(n_cols))
        row_max_kernel[(n_rows,)](x, row_max, n_cols, x.stride(0), BLOCK=RBLOCK, num_warps=8)
        row_sumexp_kernel[(n_rows,)](x, row_max, row_sum, n_cols, x.stride(0), BLOCK=RBLOCK, num_warps=8)
        NBLOCK = 2048
        grid = (n_rows, triton.cdiv(n_cols, NBLOCK))
        normalize_kernel[grid](x, row_max, row_sum, y, n_cols, x.stride(0), y.stride(0), BLOCK=NBLOCK, num_warps=4)
        return y
