# cuBLAS GEMM (fp32) + one separate Triton kernel per epilogue operation (unfused)
import torch
import torch.nn as nn
import triton
import triton.language as tl

@triton.jit
def _copy_kernel(in_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    v = tl.load(in_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, v, mask=mask)

@triton.jit
def _mul_kernel(in_ptr, out_ptr, n_elements, c, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    v = tl.load(in_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, v * c, mask=mask)

@triton.jit
def _add_kernel(a_ptr, b_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    a = tl.load(a_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, a + b, mask=mask)


def _unary(kernel, t, *scalars):
    t = t.contiguous()
    out = torch.empty_like(t)
    n = t.numel()
    BLOCK = 1024
    kernel[(triton.cdiv(n, BLOCK),)](t, out, n, *scalars, BLOCK=BLOCK, num_warps=4)
    return out


def _binary(kernel, a, b):
    a = a.contiguous()
    b = b.contiguous()
    out = torch.empty_like(a)
    n = a.numel()
    BLOCK = 1024
    kernel[(triton.cdiv(n, BLOCK),)](a, b, out, n, BLOCK=BLOCK, num_warps=4)
    return out


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scaling_factor):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.scaling_factor = float(scaling_factor)

    def forward(self, x):
        y = torch.nn.functional.linear(x, self.matmul.weight, self.matmul.bias)
        original = _unary(_copy_kernel, y)
        y = _unary(_mul_kernel, y, self.scaling_factor)
        y = _binary(_add_kernel, y, original)
        return y
