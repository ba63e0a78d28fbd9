# cuBLAS GEMM (fp32) + one fused Triton epilogue
import torch
import torch.nn as nn
import triton
import triton.language as tl

@triton.jit
def _epilogue_kernel(y_ptr, out_ptr, n_elements, scaling_factor, BLOCK: tl.constexpr):
    # y * scaling_factor + y with y = x @ W^T + b: the GEMM (with its bias) is done; apply the rest in one pass
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    y = y * scaling_factor + y
    tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scaling_factor):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.scaling_factor = float(scaling_factor)

    def forward(self, x):
        y = torch.nn.functional.linear(x, self.matmul.weight, self.matmul.bias)
        y = y.contiguous()
        out = torch.empty_like(y)
        n = y.numel()
        BLOCK = 1024
        _epilogue_kernel[(triton.cdiv(n, BLOCK),)](y, out, n, self.scaling_factor, BLOCK=BLOCK, num_warps=4)
        return out
