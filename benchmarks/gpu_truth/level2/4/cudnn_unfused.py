# cuDNN conv (fp32) + one simple Triton kernel per remaining op (Mish, then Mish again)
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def _mish_kernel(x_ptr, out_ptr, total, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < total
    v = tl.load(x_ptr + offs, mask=m, other=0.0)
    # mish(v) = v * tanh(softplus(v)); with e = exp(v), tanh(log(1 + e)) = e(e + 2) / (e(e + 2) + 2)
    # (no cancellation for negative v); softplus is the identity above 20, as in PyTorch
    e = tl.exp(tl.minimum(v, 20.0))
    t = e * (e + 2.0)
    y = tl.where(v > 20.0, v, v * (t / (t + 2.0)))
    tl.store(out_ptr + offs, y, mask=m)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        y = F.conv2d(x, self.conv.weight, self.conv.bias).contiguous()
        total = y.numel()
        BLOCK = 1024
        grid = (triton.cdiv(total, BLOCK),)
        y1 = torch.empty_like(y)
        _mish_kernel[grid](y, y1, total, BLOCK=BLOCK, num_warps=4)
        y2 = torch.empty_like(y)
        _mish_kernel[grid](y1, y2, total, BLOCK=BLOCK, num_warps=4)
        return y2
