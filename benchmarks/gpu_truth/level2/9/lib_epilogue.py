# cuBLAS GEMM (fp32) + one fused Triton epilogue
import torch
import torch.nn as nn
import triton
import triton.language as tl

@triton.jit
def _epilogue_kernel(y_ptr, out_ptr, n_elements, subtract_value, multiply_value, BLOCK: tl.constexpr):
    # relu((x @ W^T + b - subtract_value) * multiply_value): the GEMM (with its bias) is done; apply the rest in one pass
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    y = (y - subtract_value) * multiply_value
    y = tl.maximum(y, 0.0)
    tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, subtract_value, multiply_value):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.subtract_value = float(subtract_value)
        self.multiply_value = float(multiply_value)

    def forward(self, x):
        y = torch.nn.functional.linear(x, self.linear.weight, self.linear.bias)
        y = y.contiguous()
        out = torch.empty_like(y)
        n = y.numel()
        BLOCK = 1024
        _epilogue_kernel[(triton.cdiv(n, BLOCK),)](y, out, n, self.subtract_value, self.multiply_value, BLOCK=BLOCK, num_warps=4)
        return out
