# cuDNN conv3d (fp32, F.conv3d) + a Triton copy into the output (no epilogue), BLOCK 1024, 4 warps [family=conv3d_lib fused=1 block=1024 warps=4]
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _epilogue_0(y_ptr, out_ptr, P, C, BLOCK: tl.constexpr):
    plane = tl.program_id(0)
    co = plane % C
    co_ok = co >= 0
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < P
    y = tl.load(y_ptr + plane.to(tl.int64) * P + offs, mask=ok, other=0.0)
    y = y
    tl.store(out_ptr + plane.to(tl.int64) * P + offs, y, mask=ok)


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0, dilation: int = 1, groups: int = 1, bias: bool = False):
        super().__init__()
        self.conv3d = nn.Conv3d(in_channels, out_channels, (kernel_size, kernel_size, kernel_size), stride=stride, padding=padding, dilation=dilation, groups=groups, bias=bias)

    def forward(self, x):
        conv = self.conv3d
        y = F.conv3d(x, conv.weight, conv.bias).contiguous()
        N, C = y.shape[0], y.shape[1]
        P = y[0, 0].numel()
        grid = (N * C, triton.cdiv(P, 1024))
        out = torch.empty_like(y)
        _epilogue_0[grid](y, out, P, C, BLOCK=1024, num_warps=4)
        y = out
        return y
