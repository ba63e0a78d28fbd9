# cuBLAS GEMM (fp32, torch.mm) + one fused Triton epilogue pass (bias, swish and scaling), BLOCK 1024, 4 warps [family=lib_epilogue fused=1 block=1024 warps=4]
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _epilogue_0(y_ptr, out_ptr, bias_ptr, n_elements, N, scaling_factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n_elements
    y = tl.load(y_ptr + offs, mask=inside, other=0.0)
    y = y + tl.load(bias_ptr + offs % N)
    y = y * tl.sigmoid(y) * scaling_factor
    tl.store(out_ptr + offs, y, mask=inside)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scaling_factor):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.scaling_factor = float(scaling_factor)

    def forward(self, x):
        a = x.contiguous()
        b = self.matmul.weight
        bias = self.matmul.bias.contiguous()
        y = torch.mm(a, b.t())
        n = y.numel()
        N = y.shape[1]
        grid = (triton.cdiv(n, 1024),)
        out = torch.empty_like(y)
        _epilogue_0[grid](y, out, bias, n, N, self.scaling_factor, BLOCK=1024, num_warps=4)
        y = out
        return y
