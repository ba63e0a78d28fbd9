# cuBLAS GEMM (fp32) + one separate Triton kernel per epilogue operation (unfused)
import torch
import torch.nn as nn
import triton
import triton.language as tl

@triton.jit
def _sigmoid(v):
    return 1.0 / (1.0 + tl.exp(-v))

@triton.jit
def _sigmoid_kernel(in_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    v = tl.load(in_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, _sigmoid(v), mask=mask)

@triton.jit
def _rowsum_kernel(in_ptr, out_ptr, N, stride_m, stride_n, BLOCK_N: tl.constexpr):
    # out[row, 0] = sum_n in[row, n]
    row = tl.program_id(0)
    base = in_ptr + row.to(tl.int64) * stride_m
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        acc += tl.load(base + cols * stride_n, mask=cols < N, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def _unary(kernel, t, *scalars):
    t = t.contiguous()
    out = torch.empty_like(t)
    n = t.numel()
    BLOCK = 1024
    kernel[(triton.cdiv(n, BLOCK),)](t, out, n, *scalars, BLOCK=BLOCK, num_warps=4)
    return out


def _rowsum(t):
    M, N = t.shape
    out = torch.empty((M, 1), device=t.device, dtype=torch.float32)
    _rowsum_kernel[(M,)](t, out, N, t.stride(0), t.stride(1), BLOCK_N=1024, num_warps=4)
    return out


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.linear = nn.Linear(input_size, hidden_size)

    def forward(self, x):
        y = torch.nn.functional.linear(x, self.linear.weight, self.linear.bias)
        y = _unary(_sigmoid_kernel, y)
        y = _rowsum(y)
        return y
