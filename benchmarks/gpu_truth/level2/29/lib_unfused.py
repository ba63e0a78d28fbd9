# cuBLAS GEMM (fp32) + one separate Triton kernel per epilogue operation (unfused)
import torch
import torch.nn as nn
import triton
import triton.language as tl

@triton.jit
def _mish(v):
    # mish(v) = v * tanh(softplus(v)); with e = exp(v): tanh(log1p(e)) = e(e+2) / (e(e+2) + 2)
    e = tl.exp(tl.minimum(v, 20.0))
    n = e * (e + 2.0)
    return tl.where(v > 20.0, v, v * (n / (n + 2.0)))

@triton.jit
def _mish_kernel(in_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    v = tl.load(in_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, _mish(v), mask=mask)


def _unary(kernel, t, *scalars):
    t = t.contiguous()
    out = torch.empty_like(t)
    n = t.numel()
    BLOCK = 1024
    kernel[(triton.cdiv(n, BLOCK),)](t, out, n, *scalars, BLOCK=BLOCK, num_warps=4)
    return out


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = torch.nn.functional.linear(x, self.linear.weight, self.linear.bias)
        y = _unary(_mish_kernel, y)
        y = _unary(_mish_kernel, y)
        return y
