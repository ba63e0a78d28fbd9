# cuDNN conv (fp32) + one fused Triton epilogue (scale + min over channels)
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def _scale_min_kernel(y_ptr, out_ptr, P, C, scale, BLOCK: tl.constexpr):
    # one program: BLOCK pixels of image n; running min over the C channel planes of scale * conv
    pid_p = tl.program_id(0)
    n = tl.program_id(1)
    offs = pid_p * BLOCK + tl.arange(0, BLOCK)
    m = offs < P
    base = y_ptr + n.to(tl.int64) * C * P + offs
    best = tl.full((BLOCK,), float("inf"), dtype=tl.float32)
    for c in range(0, C):
        v = tl.load(base + c * P, mask=m, other=0.0)
        best = tl.minimum(best, v * scale)
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
        out = torch.empty((N, 1, OH, OW), device=x.device, dtype=torch.float32)
        BLOCK = 512
        _scale_min_kernel[(triton.cdiv(P, BLOCK), N)](
            y, out, P, C, float(self.scale_factor), BLOCK=BLOCK, num_warps=4)
        return out
