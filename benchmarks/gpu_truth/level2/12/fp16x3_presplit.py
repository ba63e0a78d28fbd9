# Triton fp16 hi/lo split pass (round to nearest, the weight scaled by 2^8 first) + one Triton GEMM with 3 fp16 dots per K step chained on one fp32 accumulator (an H100 measured 2.89e-5 at K = 8192, over strict's 2e-5), 128x128x64 w8 s3, epilogue fused
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _split_fp16_kernel(src_ptr, hi_ptr, lo_ptr, n_elements, scale, BLOCK: tl.constexpr):
    # hi = v*scale rounded to the nearest fp16; lo = (v*scale - hi) rounded to the nearest fp16: v*scale = hi + lo
    # within about 2^-22 |v*scale| while lo stays out of fp16's subnormals (scale is a power of two: exact)
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    v = tl.load(src_ptr + offs, mask=mask, other=0.0) * scale
    hi = v.to(tl.float16)
    lo = (v - hi.to(tl.float32)).to(tl.float16)
    tl.store(hi_ptr + offs, hi, mask=mask)
    tl.store(lo_ptr + offs, lo, mask=mask)


def _split_fp16(t, scale):
    t = t.contiguous()
    hi = torch.empty(t.shape, device=t.device, dtype=torch.float16)
    lo = torch.empty(t.shape, device=t.device, dtype=torch.float16)
    n = t.numel()
    BLOCK = 4096
    _split_fp16_kernel[(triton.cdiv(n, BLOCK),)](t, hi, lo, n, scale, BLOCK=BLOCK, num_warps=8)
    return hi, lo


@triton.jit
def _gemm_fp16x3_kernel(
    xh_ptr,
    xl_ptr,
    wh_ptr,
    wl_ptr,
    b_ptr,
    out_ptr,
    M,
    N,
    K,
    stride_xm,
    stride_wn,
    stride_om,
    unscale,
    multiplier,
    negative_slope,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    # leaky_relu((x @ W^T + b) * multiplier), x @ W^T ~ x_lo W_hi^T + x_hi W_lo^T + x_hi W_hi^T (x_lo W_lo^T dropped)
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
    # rows/cols past the edge are wrapped for the loads (always in bounds) and masked at the store
    offs_m_ld = offs_m % M
    offs_n_ld = offs_n % N
    a_off = offs_m_ld[:, None] * stride_xm + offs_k[None, :]
    b_off = offs_n_ld[None, :] * stride_wn + offs_k[:, None]  # (BLOCK_K, BLOCK_N) view of W^T

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = offs_k < K - k0
        a_hi = tl.load(xh_ptr + a_off, mask=k_ok[None, :], other=0.0)
        a_lo = tl.load(xl_ptr + a_off, mask=k_ok[None, :], other=0.0)
        b_hi = tl.load(wh_ptr + b_off, mask=k_ok[:, None], other=0.0)
        b_lo = tl.load(wl_ptr + b_off, mask=k_ok[:, None], other=0.0)
        # the two small cross terms first, then the big hi*hi product, all into one fp32 accumulator
        acc = tl.dot(a_lo, b_hi, acc)
        acc = tl.dot(a_hi, b_lo, acc)
        acc = tl.dot(a_hi, b_hi, acc)
        a_off += BLOCK_K
        b_off += BLOCK_K

    bias = tl.load(b_ptr + offs_n_ld)
    y = (acc * unscale + bias[None, :]) * multiplier
    y = tl.where(y >= 0, y, y * negative_slope)
    mask = (offs_m < M)[:, None] & (offs_n < N)[None, :]
    tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :], y, mask=mask)


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
        # nn.Linear's weights lie within 1/sqrt(K): 2^8 brings their low parts above fp16's smallest normal
        x_hi, x_lo = _split_fp16(x, 1.0)
        w_hi, w_lo = _split_fp16(w, 256.0)
        BLOCK_M, BLOCK_N, BLOCK_K = 128, 128, 64
        out = torch.empty((M, N), device=x.device, dtype=torch.float32)
        _gemm_fp16x3_kernel[(triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)](
            x_hi,
            x_lo,
            w_hi,
            w_lo,
            b,
            out,
            M,
            N,
            K,
            x_hi.stride(0),
            w_hi.stride(0),
            out.stride(0),
            1.0 / 256.0,
            self.multiplier,
            self.negative_slope,
            BLOCK_M=BLOCK_M,
            BLOCK_N=BLOCK_N,
            BLOCK_K=BLOCK_K,
            GROUP_M=8,
            num_warps=8,
            num_stages=3,
        )
        return out
