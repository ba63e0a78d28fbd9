# log-softmax over rows, one program per row: an online max/sum sweep (4096 columns at a time), then a write sweep (2 reads, 1 write), 4 warps [family=row_online block=4096 warps=4]
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _logsoftmax_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * N
    cols = tl.arange(0, BLOCK)
    m = tl.full((BLOCK,), float("-inf"), tl.float32)
    s = tl.zeros((BLOCK,), dtype=tl.float32)
    for c0 in range(0, N, BLOCK):
        x = tl.load(x_ptr + base + c0 + cols, mask=c0 + cols < N, other=float("-inf"))
        new = tl.maximum(m, x)
        s = tl.where(new == float("-inf"), 0.0, s * tl.exp(m - new) + tl.exp(x - new))
        m = new
    row_max = tl.max(m, axis=0)
    lse = row_max + tl.log(tl.sum(s * tl.exp(m - row_max), axis=0))
    for c0 in range(0, N, BLOCK):
        ok = c0 + cols < N
        x = tl.load(x_ptr + base + c0 + cols, mask=ok, other=0.0)
        tl.store(out_ptr + base + c0 + cols, x - lse, mask=ok)


class ModelNew(nn.Module):
    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        R, N = x.shape
        out = torch.empty_like(x)
        _logsoftmax_kernel[(R,)](x, out, N, BLOCK=4096, num_warps=4)
        return out
