# cuDNN conv (fp32) + one simple Triton kernel per remaining op (scale, then min over channels)
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(x_ptr, out_ptr, total, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < total
    v = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(out_ptr + offs, v * scale, mask=m)


@triton.jit
def _min_channels_kernel(x_ptr, out_ptr, P, C, BLOCK: tl.constexpr):
    # one program: BLOCK pixels of image n, min over the C channel planes
    pid_p = tl.program_id(0)
    n = tl.program_id(1)
    offs = pid_p * BLOCK + tl.arange(0, BLOCK)
    m = offs < P
    base = x_ptr + n.to(tl.int64) * C * P + offs
    best = tl.full((BLOCK,), float("inf"), dtype=tl.float32)
    for c in range(0, C):
        best = tl.minimum(best, tl.load(base + c * P, mask=m, other=0.0))
    tl.store(out_ptr + n.to(tl.int64) * P + offs, best, mask=m)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, scale_factor):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.scale_factor = scale_factor

    def forward(self, x):
        y = F.conv2d(x, self.conv.weight, self.conv.bias).contiguous()
        N, C, OH, OW = y.shape
        P = OH * OW
        total = y.numel()
        BLOCK = 1024
        ys = torch.empty_like(y)
        _scale_kernel[(triton.cdiv(total, BLOCK),)](
            y, ys, total, float(self.scale_factor), BLOCK=BLOCK, num_warps=4)
        out = torch.empty((N, 1, OH, OW), device=x.device, dtype=torch.float32)
        RBLOCK = 512
        _min_channels_kernel[(triton.cdiv(P, RBLOCK), N)](ys, out, P, C, BLOCK=RBLOCK, num_warps=4)
        return out
