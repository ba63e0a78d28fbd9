# max pooling (4x4 window, stride 1, padding 1), 2D output tiles of 64x64 per program, 16 shifted masked loads, 8 warps [family=pool_tiles bh=64 bw=64 warps=8]
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _maxpool_kernel(x_ptr, out_ptr, H, W, OH, OW, KS: tl.constexpr, STRIDE: tl.constexpr, PAD: tl.constexpr, DIL: tl.constexpr, BH: tl.constexpr, BW: tl.constexpr):
    plane = tl.program_id(0)
    oh = tl.program_id(1) * BH + tl.arange(0, BH)
    ow = tl.program_id(2) * BW + tl.arange(0, BW)
    x_base = x_ptr + plane.to(tl.int64) * H * W
    acc = tl.full((BH, BW), float("-inf"), tl.float32)
    for kh in tl.static_range(KS):
        ih = oh * STRIDE - PAD + kh * DIL
        h_ok = (ih >= 0) & (ih < H)
        for kw in tl.static_range(KS):
            iw = ow * STRIDE - PAD + kw * DIL
            ok = h_ok[:, None] & ((iw >= 0) & (iw < W))[None, :]
            v = tl.load(x_base + ih[:, None] * W + iw[None, :], mask=ok, other=float("-inf"))
            acc = tl.maximum(acc, v)
    out_ok = (oh < OH)[:, None] & (ow < OW)[None, :]
    tl.store(out_ptr + plane.to(tl.int64) * OH * OW + oh[:, None] * OW + ow[None, :], acc, mask=out_ok)


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int, dilation: int):
        super().__init__()
        self.k, self.s, self.p, self.d = kernel_size, stride, padding, dilation

    def forward(self, x):
        x = x.contiguous()
        N, C, H, W = x.shape
        OH = (H + 2 * self.p - self.d * (self.k - 1) - 1) // self.s + 1
        OW = (W + 2 * self.p - self.d * (self.k - 1) - 1) // self.s + 1
        out = torch.empty((N, C, OH, OW), device=x.device, dtype=x.dtype)
        grid = (N * C, triton.cdiv(OH, 64), triton.cdiv(OW, 64))
        _maxpool_kernel[grid](x, out, H, W, OH, OW, KS=self.k, STRIDE=self.s, PAD=self.p, DIL=self.d, BH=64, BW=64, num_warps=8)
        return out
