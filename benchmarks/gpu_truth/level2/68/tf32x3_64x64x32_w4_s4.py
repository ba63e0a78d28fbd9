# one Triton GEMM, tf32x3 dot on fp32 tiles, 64x64x32 w4 s4, grouped order (GROUP_M 8), one program per tile, accumulator from tl.zeros, pointer loads, bias, min with the constant and subtract fused [family=gemm prec=tf32x3 split=- bm=64 bn=64 bk=32 warps=4 stages=4 group=8 acc=zeros persistent=- tma=0 autotune=0]
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _gemm_kernel(
    a_ptr,
    b_ptr,
    out_ptr,
    bias_ptr,
    const_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_om,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    # grouped order: GROUP_M row tiles walk the column tiles together (B tiles reused in L2)
    num_pid_in_group = GROUP_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    # rows/cols past the edge are wrapped for the loads (always in bounds) and masked at the store
    offs_m_ld = offs_m % M
    offs_n_ld = offs_n % N
    offs_k = tl.arange(0, BLOCK_K)
    a_off = offs_m_ld[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_off = offs_k[:, None] * stride_bk + offs_n_ld[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = offs_k < K - k0
        a = tl.load(a_ptr + a_off + k0 * stride_ak, mask=k_ok[None, :], other=0.0)
        b = tl.load(b_ptr + b_off + k0 * stride_bk, mask=k_ok[:, None], other=0.0)
        acc = tl.dot(a, b, acc, input_precision="tf32x3")
    bias = tl.load(bias_ptr + offs_n_ld)
    y = acc + bias[None, :]
    mask = (offs_m < M)[:, None] & (offs_n < N)[None, :]
    c = tl.load(const_ptr)
    y = tl.minimum(y, c) - c
    tl.store(out_ptr + offs_m.to(tl.int64)[:, None] * stride_om + offs_n[None, :], y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, constant):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.constant = nn.Parameter(torch.tensor(constant))

    def forward(self, x):
        a = x.contiguous()
        b = self.linear.weight.contiguous()
        M, K = a.shape
        N = b.shape[0]
        bias = self.linear.bias.contiguous()
        out = torch.empty((M, N), device=a.device, dtype=torch.float32)
        BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 32
        num_tiles = triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)
        grid = (num_tiles,)
        _gemm_kernel[grid](
            a,
            b,
            out,
            bias,
            self.constant,
            M,
            N,
            K,
            a.stride(0),
            a.stride(1),
            b.stride(1),
            b.stride(0),
            out.stride(0),
            BLOCK_M=BLOCK_M,
            BLOCK_N=BLOCK_N,
            BLOCK_K=BLOCK_K,
            GROUP_M=8,
            num_warps=4,
            num_stages=4,
        )
        return out
