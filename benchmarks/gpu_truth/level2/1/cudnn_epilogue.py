# cuDNN conv (fp32) + one fused Triton epilogue (ReLU + bias add)
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def _chain(v, b):
    # relu, then the per-channel bias parameter
    return tl.maximum(v, 0.0) + b


@triton.jit
def _epilogue_kernel(y_ptr, bias_ptr, P, C, BLOCK: tl.constexpr):
    # one program: BLOCK pixels of one (n, c) plane of the conv output, updated in place
    plane = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = offs < P
    ptrs = y_ptr + plane.to(tl.int64) * P + offs
    v = tl.load(ptrs, mask=m, other=0.0)
    pc = tl.load(bias_ptr + plane % C)
    tl.store(ptrs, _chain(v, pc), mask=m)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        y = F.conv2d(x, self.conv.weight, self.conv.bias).contiguous()
        N, C, OH, OW = y.shape
        P = OH * OW
        BLOCK = 1024
        grid = (N * C, triton.cdiv(P, BLOCK))
        _epilogue_kernel[grid](y, self.bias, P, C, BLOCK=BLOCK, num_warps=4)
        return y
