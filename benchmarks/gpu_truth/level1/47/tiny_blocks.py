# Sum over a middle dim, badly laid out on purpose: one single-warp program per output element, strided loads of 64 reduced elements at a time.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_column_kernel(x_ptr, y_ptr, R, inner, BLOCK_R: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    o = pid // inner
    i = pid % inner
    base = x_ptr + o * R * inner + i
    acc = tl.zeros([BLOCK_R], tl.float32)
    for start in range(0, R, BLOCK_R):
        rows = start + tl.arange(0, BLOCK_R)
        acc += tl.load(base + rows.to(tl.int64) * inner, mask=rows < R, other=0.0).to(tl.float32)
    tl.store(y_ptr + pid, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        d = self.dim % x.dim()
        shape = list(x.shape)
        R = shape[d]
        inner = 1
        for s in shape[d + 1:]:
            inner *= s
        out_shape = shape[:d] + [1] + shape[d + 1:]
        y = torch.empty(out_shape, device=x.device, dtype=x.dtype)
        sum_column_kernel[(y.numel(),)](x, y, R, inner, BLOCK_R=64, num_warps=1)
        return y
