# MinGPT tanh-GELU, badly sized launch on purpose: 64 elements per program with a single warp.
import math
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n, C: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    u = C * (x + 0.044715 * x * x * x)
    y = 0.5 * x * (1.0 + libdevice.tanh(u))
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        BLOCK = 64
        gelu_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, C=math.sqrt(2.0 / math.pi), BLOCK=BLOCK, num_warps=1)
        return y
