# bf16x3_inloop.py as a persistent kernel on a grid of 12 programs (a constant where the SM count belongs), each looping over the tiles; the same split, tiles and epilogue
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _gemm_bf16x3_persistent_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    out_ptr,
    M,
    N,
    K,
    stride_xm,
    stride_wn,
    stride_om,
    multiplier,
    negative_slope,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    NUM_PROGRAMS: tl.constexpr,
):
    # leaky_relu((x @ W^T + b) * multiplier), x @ W^T ~ x_lo W_hi^T + x_hi W_lo^T + x_hi W_hi^T (x_lo W_lo^T dropped)
    num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    for pid in range(tl.program_id(0), num_tiles, NUM_PROGRAMS):
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
        # rows/cols past the edge are wrapped for the loads (always in bounds) and masked at the store
        offs_m_ld = offs_m % M
        offs_n_ld = offs_n % N
        a_off = offs_m_ld[:, None] * stride_xm + offs_k[None, :]
        b_off = offs_n_ld[None, :] * stride_wn + offs_k[:, None]  # (BLOCK_K, BLOCK_N) view of W^T

        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            k_ok = offs_k < K - k0
            a = tl.load(x_ptr + a_off, mask=k_ok[None, :], other=0.0)
            b = tl.load(w_ptr + b_off, mask=k_ok[:, None], other=0.0)
            a_hi = a.to(tl.bfloat16)
            a_lo = (a - a_hi.to(tl.float32)).to(tl.bfloat16)
            b_hi = b.to(tl.bfloat16)
            b_lo = (b - b_hi.to(tl.float32)).to(tl.bfloat16)
            # the two small cross terms first, then the big hi*hi product, all into one fp32 accumulator
            acc = tl.dot(a_lo, b_hi, acc)
            acc = tl.dot(a_hi, b_lo, acc)
            acc = tl.dot(a_hi, b_hi, acc)
            a_off += BLOCK_K
            b_off += BLOCK_K

        bias = tl.load(b_ptr + offs_n_ld)
        y = (acc + bias[None, :]) * multiplier
        y = tl.where(y >= 0, y, y * negative_slope)
        mask = (offs_m < M)[:, None] & (offs_n < N)[None, :]
        tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :], y, mask=mask)


# a constant where the GPU's SM count belongs (132 on an H200): 12 of its SMs do all the work
NUM_PROGRAMS = 12


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = float(multiplier)
        self.negative_slope = float(negative_slope)

    def forward(self, x):
        w = self.gemm.weight
        b = self.gemm.bias.contiguous()
        M, K = x.shape
        N = w.shape[0]
        x = x.contiguous()
        w = w.contiguous()
        BLOCK_M, BLOCK_N, BLOCK_K = 128, 128, 32
        out = torch.empty((M, N), device=x.device, dtype=torch.float32)
        _gemm_bf16x3_persistent_kernel[(NUM_PROGRAMS,)](
            x,
            w,
            b,
            out,
            M,
            N,
            K,
            x.stride(0),
            w.stride(0),
            out.stride(0),
            self.multiplier,
            self.negative_slope,
            BLOCK_M=BLOCK_M,
            BLOCK_N=BLOCK_N,
            BLOCK_K=BLOCK_K,
            GROUP_M=8,
            NUM_PROGRAMS=NUM_PROGRAMS,
            num_warps=8,
            num_stages=3,
        )
        return out
