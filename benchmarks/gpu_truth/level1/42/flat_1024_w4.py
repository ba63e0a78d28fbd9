# max pooling (4x4 window, stride 1, padding 1), flat: 1024 outputs per program, each index unravelled to (plane, row, column), 16 gathered masked loads, 4 warps [family=pool_flat block=1024 warps=4]
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _maxpool_flat_kernel(x_ptr, out_ptr, total, H, W, OH, OW, KS: tl.constexpr, STRIDE: tl.constexpr, PAD: tl.constexpr, DIL: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok_out = offs < total
    ow = offs % OW
    oh = (offs // OW) % OH
    plane = offs // (OW * OH)
    acc = tl.full((BLOCK,), float("-inf"), tl.float32)
    for kh in tl.static_range(KS):
        ih = oh * STRIDE - PAD + kh * DIL
        for kw in tl.static_range(KS):
            iw = ow * STRIDE - PAD + kw * DIL
            ok = ok_out & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            acc = tl.maximum(acc, tl.load(x_ptr + (plane * H + ih) * W + iw, mask=ok, other=float("-inf")))
    tl.store(out_ptr + offs, acc, mask=ok_out)


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
        total = out.numel()
        _maxpool_flat_kernel[(triton.cdiv(total, 1024),)](x, out, total, H, W, OH, OW, KS=self.k, STRIDE=self.s, PAD=self.p, DIL=self.d, BLOCK=1024, num_warps=4)
        return out
