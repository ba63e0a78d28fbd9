# cuDNN conv3d (fp32, F.conv3d) + one fused Triton epilogue (LeakyReLU + add + clamp + GELU), BLOCK 1024, 4 warps [family=conv3d_lib fused=1 block=1024 warps=4]
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _epilogue_0(y_ptr, out_ptr, sum_ptr, P, C, BLOCK: tl.constexpr):
    plane = tl.program_id(0)
    co = plane % C
    co_ok = co >= 0
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < P
    y = tl.load(y_ptr + plane.to(tl.int64) * P + offs, mask=ok, other=0.0)
    y = tl.where(y >= 0, y, y * 0.2)
    y = y + tl.load(sum_ptr + co, mask=co_ok, other=0.0)
    y = tl.minimum(tl.maximum(y, -1.0), 1.0)
    y = 0.5 * y * (1.0 + tl.math.erf(y * 0.7071067811865476))
    tl.store(out_ptr + plane.to(tl.int64) * P + offs, y, mask=ok)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, sum_tensor_shape):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)
        self.sum_tensor = nn.Parameter(torch.randn(sum_tensor_shape))

    def forward(self, x):
        conv = self.conv
        y = F.conv3d(x, conv.weight, conv.bias).contiguous()
        N, C = y.shape[0], y.shape[1]
        P = y[0, 0].numel()
        grid = (N * C, triton.cdiv(P, 1024))
        out = torch.empty_like(y)
        _epilogue_0[grid](y, out, self.sum_tensor, P, C, BLOCK=1024, num_warps=4)
        y = out
        return y
