# cuDNN conv (fp32) + one fused Triton epilogue (divide + LeakyReLU)
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def _chain(v, divisor, slope):
    v = v / divisor
    return tl.where(v > 0.0, v, v * slope)


@triton.jit
def _epilogue_kernel(y_ptr, divisor, slope, P, C, BLOCK: tl.constexpr):
    # one program: BLOCK pixels of one (n, c) plane of the conv output, updated in place
    plane = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = offs < P
    ptrs = y_ptr + plane.to(tl.int64) * P + offs
    v = tl.load(ptrs, mask=m, other=0.0)
    tl.store(ptrs, _chain(v, divisor, slope), mask=m)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, divisor):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.divisor = divisor

    def forward(self, x):
        y = F.conv2d(x, self.conv.weight, self.conv.bias).contiguous()
        N, C, OH, OW = y.shape
        P = OH * OW
        BLOCK = 1024
        grid = (N * C, triton.cdiv(P, BLOCK))
        _epilogue_kernel[grid](y, float(self.divisor), 0.01, P, C, BLOCK=BLOCK, num_warps=4)
        return y
