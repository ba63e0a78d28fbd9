# cuBLAS GEMM (fp32) + one fused Triton epilogue
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
def _epilogue_kernel(y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    # mish(mish(x @ W^T + b)): the GEMM (with its bias) is done; apply the rest in one pass
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    y = _mish(_mish(y))
    tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = torch.nn.functional.linear(x, self.linear.weight, self.linear.bias)
        y = y.contiguous()
        out = torch.empty_like(y)
        n = y.numel()
        BLOCK = 1024
        _epilogue_kernel[(triton.cdiv(n, BLOCK),)](y, out, n, BLOCK=BLOCK, num_warps=4)
        return out
