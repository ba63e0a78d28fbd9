# one Triton GEMM, tf32x3 dot on fp32 tiles, 128x128x32 w8 s3, grouped order (GROUP_M 8), persistent (grid sms, a loop over tiles), accumulator from tl.zeros, pointer loads, bias add and ReLU fused [family=gemm prec=tf32x3 split=- bm=128 bn=128 bk=32 warps=8 stages=3 group=8 acc=zeros persistent=sms tma=0 autotune=0]
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
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_om,
    NUM_PROGS,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    for tile in range(tl.program_id(0), num_tiles, NUM_PROGS):
        num_pid_m = tl.cdiv(M, BLOCK_M)
        num_pid_n = tl.cdiv(N, BLOCK_N)
        # grouped order: GROUP_M row tiles walk the column tiles together (B tiles reused in L2)
        num_pid_in_group = GROUP_M * num_pid_n
        first_pid_m = (tile // num_pid_in_group) * GROUP_M
        group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + ((tile % num_pid_in_group) % group_size_m)
        pid_n = (tile % num_pid_in_group) // group_size_m
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
        y = tl.maximum(y, 0.0)
        tl.store(out_ptr + offs_m.to(tl.int64)[:, None] * stride_om + offs_n[None, :], y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        a = x.contiguous()
        b = self.gemm.weight.contiguous()
        M, K = a.shape
        N = b.shape[0]
        bias = self.bias.contiguous()
        out = torch.empty((M, N), device=a.device, dtype=torch.float32)
        BLOCK_M, BLOCK_N, BLOCK_K = 128, 128, 32
        num_tiles = triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)
        sms = torch.cuda.get_device_properties(a.device).multi_processor_count
        programs = sms
        programs = min(programs, num_tiles)
        grid = (programs,)
        _gemm_kernel[grid](
            a,
            b,
            out,
            bias,
            M,
            N,
            K,
            a.stride(0),
            a.stride(1),
            b.stride(1),
            b.stride(0),
            out.stride(0),
            programs,
            BLOCK_M=BLOCK_M,
            BLOCK_N=BLOCK_N,
            BLOCK_K=BLOCK_K,
            GROUP_M=8,
            num_warps=8,
            num_stages=3,
        )
        return out
