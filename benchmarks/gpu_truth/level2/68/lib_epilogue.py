# cuBLAS GEMM (fp32, torch.mm) + one fused Triton epilogue pass (bias, min with the constant and subtract), BLOCK 1024, 4 warps [family=lib_epilogue fused=1 block=1024 warps=4]
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _epilogue_0(y_ptr, out_ptr, bias_ptr, n_elements, N, const_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n_elements
    y = tl.load(y_ptr + offs, mask=inside, other=0.0)
    y = y + tl.load(bias_ptr + offs % N)
    c = tl.load(const_ptr)
    y = tl.minimum(y, c) - c
    tl.store(out_ptr + offs, y, mask=inside)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, constant):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.constant = nn.Parameter(torch.tensor(constant))

    def forward(self, x):
        a = x.contiguous()
        b = self.linear.weight
        bias = self.linear.bias.contiguous()
        y = torch.mm(a, b.t())
        n = y.numel()
        N = y.shape[1]
        grid = (triton.cdiv(n, 1024),)
        out = torch.empty_like(y)
        _epilogue_0[grid](y, out, bias, n, N, self.constant, BLOCK=1024, num_warps=4)
        y = out
        return y
