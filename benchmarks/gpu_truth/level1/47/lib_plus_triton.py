# Sum over a dim, PyTorch moves the reduced dim last (movedim + contiguous copy), a Triton kernel sums each contiguous row.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, y_ptr, R, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = x_ptr + row * R
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, R, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(base + offs, mask=offs < R, other=0.0).to(tl.float32)
    tl.store(y_ptr + row, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = self.dim % x.dim()
        shape = list(x.shape)
        R = shape[d]
        xt = x.movedim(d, -1).contiguous()
        n_rows = xt.numel() // R
        out_shape = shape[:d] + [1] + shape[d + 1:]
        y = torch.empty(out_shape, device=x.device, dtype=x.dtype)
        BLOCK = min(1024, triton.next_power_of_2(R))
        # y is contiguous and its element order equals the row order of xt
        row_sum_kernel[(n_rows,)](xt, y, R, BLOCK=BLOCK, num_warps=4)
        return y
