# cuBLAS GEMM (fp32) + one fused Triton epilogue
import torch
import torch.nn as nn
import triton
import triton.language as tl

@triton.jit
def _gelu(v):
    # exact (erf) GELU, as torch.nn.functional.gelu's default
    return 0.5 * v * (1.0 + tl.erf(v * 0.7071067811865476))

@triton.jit
def _epilogue_kernel(y_ptr, out_ptr, n_elements, divisor, BLOCK: tl.constexpr):
    # gelu((x @ W^T + b) / divisor): the GEMM (with its bias) is done; apply the rest in one pass
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    y = _gelu(y / divisor)
    tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, input_size, output_size, divisor):
        super().__init__()
        self.linear = nn.Linear(input_size, output_size)
        self.divisor = float(divisor)

    def forward(self, x):
        y = torch.nn.functional.linear(x, self.linear.weight, self.linear.bias)
        y = y.contiguous()
        out = torch.empty_like(y)
        n = y.numel()
        BLOCK = 1024
        _epilogue_kernel[(triton.cdiv(n, BLOCK),)](y, out, n, self.divisor, BLOCK=BLOCK, num_warps=4)
        return out
