# cuBLAS GEMM (fp32, torch.mm) + one Triton kernel for bias, scale and the batch norm: each program owns 32 columns and sweeps all rows twice (64 at a time: statistics shifted by the first row, then normalize) [family=lib_colnorm block_m=64 block_n=32 warps=4]
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scale_bn_kernel(y_ptr, out_ptr, bias_ptr, scale_ptr, w_ptr, b_ptr, M, N, eps, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < N
    bias = tl.load(bias_ptr + cols, mask=col_ok, other=0.0)
    scale = tl.load(scale_ptr + cols, mask=col_ok, other=0.0)
    # sums shifted by the first row's values (no cancellation in E[d^2] - E[d]^2 when the batch varies little)
    shift = (tl.load(y_ptr + cols, mask=col_ok, other=0.0) + bias) * scale
    s = tl.zeros((BLOCK_N,), dtype=tl.float32)
    sq = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for m0 in range(0, M, BLOCK_M):
        rows = m0 + tl.arange(0, BLOCK_M)
        inside = (rows < M)[:, None] & col_ok[None, :]
        y = tl.load(y_ptr + rows[:, None] * N + cols[None, :], mask=inside, other=0.0)
        d = tl.where(inside, (y + bias[None, :]) * scale[None, :] - shift[None, :], 0.0)
        s += tl.sum(d, axis=0)
        sq += tl.sum(d * d, axis=0)
    mean_d = s / M
    mean = shift + mean_d
    rstd = tl.rsqrt(sq / M - mean_d * mean_d + eps)
    g = tl.load(w_ptr + cols, mask=col_ok, other=1.0) * rstd
    h = tl.load(b_ptr + cols, mask=col_ok, other=0.0) - mean * g
    for m0 in range(0, M, BLOCK_M):
        rows = m0 + tl.arange(0, BLOCK_M)
        inside = (rows < M)[:, None] & col_ok[None, :]
        y = tl.load(y_ptr + rows[:, None] * N + cols[None, :], mask=inside, other=0.0)
        y = (y + bias[None, :]) * scale[None, :]
        tl.store(out_ptr + rows[:, None] * N + cols[None, :], y * g[None, :] + h[None, :], mask=inside)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale_shape, eps=1e-5, momentum=0.1):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.scale = nn.Parameter(torch.randn(scale_shape))
        self.bn = nn.BatchNorm1d(out_features, eps=eps, momentum=momentum)

    def forward(self, x):
        y = torch.mm(x.contiguous(), self.gemm.weight.t())
        M, N = y.shape
        out = torch.empty_like(y)
        _scale_bn_kernel[(triton.cdiv(N, 32),)](
            y, out, self.gemm.bias, self.scale, self.bn.weight, self.bn.bias, M, N, float(self.bn.eps),
            BLOCK_M=64, BLOCK_N=32, num_warps=4,
        )
        return out
