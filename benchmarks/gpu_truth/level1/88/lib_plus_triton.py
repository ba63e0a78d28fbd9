# MinGPT tanh-GELU, PyTorch computes tanh(sqrt(2/pi) * (x + 0.044715 x^3)), a Triton kernel forms 0.5 * x * (1 + t).
import math
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def combine_kernel(x_ptr, t_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    t = tl.load(t_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, 0.5 * x * (1.0 + t), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        t = torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))).contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        BLOCK = 1024
        combine_kernel[(triton.cdiv(n, BLOCK),)](x, t, y, n, BLOCK=BLOCK, num_warps=4)
        return y
