import torch
import torch.nn as nn
import triton
import triton.language as tl


# KernelBench Level 2 problem 12: out = leaky_relu((x @ W^T + b) * multiplier) in one fused kernel, over a fixed
# grid of one program of 1,024 outputs: enough for the small sizes (2 x 17), not for 1024 x 8192
@triton.jit
def _fused(x_ptr, w_ptr, b_ptr, out_ptr, M, N, K, multiplier, slope, BLOCK: tl.constexpr, BK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < M * N
    row = offs // N
    col = offs % N
    acc = tl.zeros((BLOCK,), tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + tl.arange(0, BK)
        km = ks < K
        x = tl.load(x_ptr + row[:, None] * K + ks[None, :], mask=mask[:, None] & km[None, :], other=0.0)
        w = tl.load(w_ptr + col[:, None] * K + ks[None, :], mask=mask[:, None] & km[None, :], other=0.0)
        acc += tl.sum(x * w, axis=1)
    y = (acc + tl.load(b_ptr + col, mask=mask, other=0.0)) * multiplier
    y = tl.where(y >= 0, y, y * slope)
    tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = float(multiplier)
        self.negative_slope = float(negative_slope)

    def forward(self, x):
        M, K = x.shape
        N = self.gemm.weight.shape[0]
        out = torch.empty((M, N), device=x.device, dtype=torch.float32)
        _fused[(1,)](
            x, self.gemm.weight, self.gemm.bias, out, M, N, K, self.multiplier, self.negative_slope, BLOCK=1024, BK=32
        )
        return out
