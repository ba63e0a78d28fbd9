# bf16_zeros.py with the fp32 accumulator started from the first K step's product instead of tl.zeros (the fix ptxas's C7515 asks for), 128x128x64 w8 s3, epilogue fused; not strict's precision (a paper-mode variant)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _to_bf16_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    keep = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=keep).to(tl.bfloat16), mask=keep)


@triton.jit
def _gemm_bf16_first_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    out_ptr,
    M,
    N,
    K,
    multiplier,
    negative_slope,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    # leaky_relu((x @ W^T + b) * multiplier) on bf16 operands with fp32 accumulation, K-masked loads
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_off = (offs_m % M)[:, None] * K + offs_k[None, :]
    b_off = (offs_n % N)[None, :] * K + offs_k[:, None]  # (BLOCK_K, BLOCK_N) view of W^T
    k_ok = offs_k < K
    acc = tl.dot(
        tl.load(x_ptr + a_off, mask=k_ok[None, :], other=0.0), tl.load(w_ptr + b_off, mask=k_ok[:, None], other=0.0)
    )
    for k0 in range(BLOCK_K, K, BLOCK_K):
        k_ok = offs_k < K - k0
        a = tl.load(x_ptr + a_off + k0, mask=k_ok[None, :], other=0.0)
        b = tl.load(w_ptr + b_off + k0, mask=k_ok[:, None], other=0.0)
        acc = tl.dot(a, b, acc)
    bias = tl.load(b_ptr + offs_n % N)
    y = (acc + bias[None, :]) * multiplier
    y = tl.where(y >= 0, y, y * negative_slope)
    mask = (offs_m < M)[:, None] & (offs_n < N)[None, :]
    tl.store(out_ptr + offs_m[:, None] * N + offs_n[None, :], y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = float(multiplier)
        self.negative_slope = float(negative_slope)

    def _bf16(self, t):
        t = t.contiguous()
        out = torch.empty(t.shape, device=t.device, dtype=torch.bfloat16)
        _to_bf16_kernel[(triton.cdiv(t.numel(), 4096),)](t, out, t.numel(), BLOCK=4096)
        return out

    def forward(self, x):
        M, K = x.shape
        N = self.gemm.weight.shape[0]
        a, w = self._bf16(x), self._bf16(self.gemm.weight)
        out = torch.empty((M, N), device=x.device, dtype=torch.float32)
        BLOCK_M, BLOCK_N = 128, 128
        _gemm_bf16_first_kernel[(triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)](
            a,
            w,
            self.gemm.bias.contiguous(),
            out,
            M,
            N,
            K,
            self.multiplier,
            self.negative_slope,
            BLOCK_M=BLOCK_M,
            BLOCK_N=BLOCK_N,
            BLOCK_K=64,
            GROUP_M=8,
            num_warps=8,
            num_stages=3,
        )
        return out
