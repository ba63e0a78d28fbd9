# Bug: the max is subtracted in the numerator but not in the denominator.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, out_ptr, n_cols, x_row_stride, out_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    out = num / tl.sum(tl.exp(x), axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, out, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.empty_like(x)
        # One program per row; the whole row lives in registers.
        BLOCK = triton.next_power_of_2(n_cols)
        num_warps = 16 if BLOCK >= 8192 else (8 if BLOCK >= 2048 else 4)
        _softmax_kernel[(n_rows,)](x, out, n_cols, x.stride(0), out.stride(0), BLOCK=BLOCK, num_warps=num_warps)
        return out
