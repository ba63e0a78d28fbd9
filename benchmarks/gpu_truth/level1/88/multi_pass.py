# MinGPT tanh-GELU as three elementwise kernels through global temporaries: inner polynomial, then tanh in place, then the final product.
import math
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def inner_kernel(x_ptr, u_ptr, n, C: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(u_ptr + offs, C * (x + 0.044715 * x * x * x), mask=mask)


@triton.jit
def tanh_inplace_kernel(u_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    u = tl.load(u_ptr + offs, mask=mask, other=0.0)
    tl.store(u_ptr + offs, libdevice.tanh(u), mask=mask)


@triton.jit
def combine_kernel(x_ptr, t_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    t = tl.load(t_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, 0.5 * x * (1.0 + t), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n = x.numel()
        t = torch.empty(x.shape, device=x.device, dtype=torch.float32)
        y = torch.empty_like(x)
        BLOCK = 1024
        grid = (triton.cdiv(n, BLOCK),)
        inner_kernel[grid](x, t, n, C=math.sqrt(2.0 / math.pi), BLOCK=BLOCK, num_warps=4)
        tanh_inplace_kernel[grid](t, n, BLOCK=BLOCK, num_warps=4)
        combine_kernel[grid](x, t, y, n, BLOCK=BLOCK, num_warps=4)
        return y
