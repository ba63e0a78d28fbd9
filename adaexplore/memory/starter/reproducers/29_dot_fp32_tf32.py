# rule: You cannot use tl.dot on fp32 inputs with its default precision when fp32 accuracy is checked: it keeps only TF32 bits; pass input_precision="tf32x3" (tensor cores, within fp32 tolerances) or "ieee" (exact, slower).
# task: matmul
# backend: interpret
# status: mismatch

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ka = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * K + ka[None, :], mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ka[:, None] * N + rn[None, :], mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, k: int, n: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(k, n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x, w = x.contiguous(), self.weight.contiguous()
        (M, K), N = x.shape, w.shape[1]
        c = torch.empty((M, N), device=x.device, dtype=torch.float32)
        grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
        _kernel[grid](x, w, c, M, N, K, BM=32, BN=32, BK=32)
        return c
