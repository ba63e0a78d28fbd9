# Softmax over rows, PyTorch computes the row logsumexp, a Triton elementwise kernel writes exp(x - lse).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def exp_shift_kernel(x_ptr, lse_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    blk = tl.program_id(1)
    offs = blk * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_cols
    lse = tl.load(lse_ptr + row)
    x = tl.load(x_ptr + row * stride_x + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride_y + offs, tl.exp(x - lse), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        lse = torch.logsumexp(x, dim=1).contiguous()
        y = torch.empty_like(x)
        BLOCK = 2048
        grid = (n_rows, triton.cdiv(n_cols, BLOCK))
        exp_shift_kernel[grid](x, lse, y, n_cols, x.stride(0), y.stride(0), BLOCK=BLOCK, num_warps=4)
        return y
