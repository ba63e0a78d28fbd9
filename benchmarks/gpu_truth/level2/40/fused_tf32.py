# one Triton GEMM, plain tf32 dot, 128x128x32 w8 s3, grouped order, epilogue fused
import torch
import torch.nn as nn
import triton
import triton.language as tl

@triton.jit
def _gemm_epilogue_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr,
    M, N, K,
    stride_xm, stride_xk, stride_wn, stride_wk, stride_om, stride_on, scaling_factor,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    # y * scaling_factor + y with y = x @ W^T + b
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    # grouped ordering: GROUP_M row tiles walk the column tiles together (W tiles reused in L2)
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
    a_ptrs = x_ptr + offs_m_ld[:, None] * stride_xm + offs_k[None, :] * stride_xk
    b_ptrs = w_ptr + offs_n_ld[None, :] * stride_wn + offs_k[:, None] * stride_wk  # (BLOCK_K, BLOCK_N) view of W^T

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = offs_k < K - k0
        a = tl.load(a_ptrs, mask=k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None], other=0.0)
        acc = tl.dot(a, b, acc, input_precision="tf32")
        a_ptrs += BLOCK_K * stride_xk
        b_ptrs += BLOCK_K * stride_wk

    bias = tl.load(b_ptr + offs_n_ld)
    y = acc + bias[None, :]
    y = y * scaling_factor + y
    mask = (offs_m < M)[:, None] & (offs_n < N)[None, :]
    tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scaling_factor):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.scaling_factor = float(scaling_factor)

    def forward(self, x):
        w = self.matmul.weight
        b = self.matmul.bias
        M, K = x.shape
        N = w.shape[0]
        BLOCK_M, BLOCK_N, BLOCK_K = 128, 128, 32
        out = torch.empty((M, N), device=x.device, dtype=torch.float32)
        _gemm_epilogue_kernel[(triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)](
            x, w, b, out,
            M, N, K,
            x.stride(0), x.stride(1), w.stride(0), w.stride(1), out.stride(0), out.stride(1), self.scaling_factor,
            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=8, num_warps=8, num_stages=3,
        )
        return out
