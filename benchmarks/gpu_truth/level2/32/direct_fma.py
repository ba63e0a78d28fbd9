# Triton direct conv (scalar-times-vector fp32 FMA, no tl.dot) with scale + min over channels fused
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def _conv_direct_min_kernel(
    x_ptr, w_ptr, cb_ptr, out_ptr, scale,
    Cin, H, W, Cout, OH, OW,
    KH: tl.constexpr, KW: tl.constexpr, BP: tl.constexpr, BC: tl.constexpr,
):
    # one program: BP output pixels of image n; it walks the output channels BC at a time, each
    # tap (ci, kh, kw) adding weight[co, ci, kh, kw] times the shifted input pixels (fp32 FMA),
    # and keeps a running min of scale * conv over the channels
    pid_p = tl.program_id(0)
    n = tl.program_id(1)
    P = OH * OW
    pix = pid_p * BP + tl.arange(0, BP)
    p_ok = pix < P
    oh = pix // OW
    ow = pix - oh * OW
    x_base = x_ptr + n.to(tl.int64) * (Cin * H * W) + (oh * W + ow)
    best = tl.full((BP,), float("inf"), dtype=tl.float32)
    for c0 in range(0, Cout, BC):
        co = c0 + tl.arange(0, BC)
        co_ok = co < Cout
        w_base = w_ptr + co * (Cin * KH * KW)
        acc = tl.zeros((BC, BP), dtype=tl.float32)
        for ci in range(0, Cin):
            for kh in tl.static_range(KH):
                for kw in tl.static_range(KW):
                    xv = tl.load(x_base + (ci * (H * W) + kh * W + kw), mask=p_ok, other=0.0)
                    wv = tl.load(w_base + (ci * (KH * KW) + kh * KW + kw), mask=co_ok, other=0.0)
                    acc += wv[:, None] * xv[None, :]
        cb = tl.load(cb_ptr + co, mask=co_ok, other=0.0)
        v = (acc + cb[:, None]) * scale
        v = tl.where(co_ok[:, None], v, float("inf"))
        best = tl.minimum(best, tl.min(v, axis=0))
    tl.store(out_ptr + n.to(tl.int64) * P + pix, best, mask=p_ok)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, scale_factor):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.scale_factor = scale_factor

    def forward(self, x):
        x = x.contiguous()
        w = self.conv.weight.contiguous()
        Cout, Cin, KH, KW = w.shape
        N, _, H, W = x.shape
        OH, OW = H - KH + 1, W - KW + 1
        out = torch.empty((N, 1, OH, OW), device=x.device, dtype=torch.float32)
        BP, BC = 128, 16
        _conv_direct_min_kernel[(triton.cdiv(OH * OW, BP), N)](
            x, w, self.conv.bias, out, float(self.scale_factor), Cin, H, W, Cout, OH, OW,
            KH=KH, KW=KW, BP=BP, BC=BC, num_warps=4,
        )
        return out
