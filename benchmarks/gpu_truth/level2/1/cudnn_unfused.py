# cuDNN conv (fp32) + one simple Triton kernel per remaining op (ReLU, then bias add)
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, out_ptr, total, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < total
    v = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(v, 0.0), mask=m)


@triton.jit
def _add_channel_bias_kernel(x_ptr, b_ptr, out_ptr, P, C, BLOCK: tl.constexpr):
    # one program: BLOCK pixels of one (n, c) plane
    plane = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = offs < P
    base = plane.to(tl.int64) * P
    b = tl.load(b_ptr + plane % C)
    v = tl.load(x_ptr + base + offs, mask=m, other=0.0)
    tl.store(out_ptr + base + offs, v + b, mask=m)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        y = F.conv2d(x, self.conv.weight, self.conv.bias).contiguous()
        N, C, OH, OW = y.shape
        P = OH * OW
        total = y.numel()
        BLOCK = 1024
        r = torch.empty_like(y)
        _relu_kernel[(triton.cdiv(total, BLOCK),)](y, r, total, BLOCK=BLOCK, num_warps=4)
        out = torch.empty_like(y)
        _add_channel_bias_kernel[(N * C, triton.cdiv(P, BLOCK))](
            r, self.bias, out, P, C, BLOCK=BLOCK, num_warps=4)
        return out
