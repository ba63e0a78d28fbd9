# Compile error: `continue` in the kernel (skipping filter rows that fall in the padding).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _conv2d_hardswish_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    out_ptr,
    C_in,
    H,
    W,
    C_out,
    KS: tl.constexpr,
    BLOCK_W: tl.constexpr,
    BLOCK_CI: tl.constexpr,
    BLOCK_CO: tl.constexpr,
):
    # Implicit GEMM for a stride-1, same-padded convolution: one program computes one output row (n, oh)
    # for a block of columns and a block of output channels; each filter tap is a
    # (BLOCK_W x BLOCK_CI) @ (BLOCK_CI x BLOCK_CO) product.
    PAD: tl.constexpr = KS // 2
    pid_row = tl.program_id(0)
    n = pid_row // H
    oh = pid_row % H
    ow = tl.program_id(1) * BLOCK_W + tl.arange(0, BLOCK_W)
    co = tl.program_id(2) * BLOCK_CO + tl.arange(0, BLOCK_CO)
    ow_mask = ow < W
    co_mask = co < C_out
    acc = tl.zeros((BLOCK_W, BLOCK_CO), dtype=tl.float32)
    for ci0 in range(0, C_in, BLOCK_CI):
        ci = ci0 + tl.arange(0, BLOCK_CI)
        ci_mask = ci < C_in
        x_chan = x_ptr + (n * C_in + ci[None, :]) * H * W  # (1, BLOCK_CI)
        w_chan = w_ptr + (co[None, :] * C_in + ci[:, None]) * KS * KS  # (BLOCK_CI, BLOCK_CO)
        w_mask = ci_mask[:, None] & co_mask[None, :]
        for kh in tl.static_range(KS):
            ih = oh + kh - PAD
            if (ih < 0) | (ih >= H):
                continue
            for kw in tl.static_range(KS):
                iw = ow + kw - PAD
                x_mask = (ow_mask & (iw >= 0) & (iw < W))[:, None] & ci_mask[None, :]
                xv = tl.load(x_chan + ih * W + iw[:, None], mask=x_mask, other=0.0)
                wv = tl.load(w_chan + kh * KS + kw, mask=w_mask, other=0.0)
                acc += tl.dot(xv, wv, input_precision="ieee")
    acc += tl.load(b_ptr + co, mask=co_mask, other=0.0)[None, :]
    acc = acc * tl.minimum(tl.maximum(acc + 3.0, 0.0), 6.0) / 6.0  # hardswish
    out_offs = ((n * C_out + co[None, :]) * H + oh) * W + ow[:, None]
    tl.store(out_ptr + out_offs, acc, mask=ow_mask[:, None] & co_mask[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        w = self.conv.weight.contiguous()
        N, C_in, H, W = x.shape
        C_out, _, KS, _ = w.shape
        out = torch.empty((N, C_out, H, W), dtype=x.dtype, device=x.device)
        # tl.dot needs every block dimension >= 16. Narrow output-channel tiles with a single warp
        # measured fastest on an H200 for this FMA-bound (ieee fp32) dot.
        BLOCK_W = max(16, min(64, triton.next_power_of_2(W)))
        BLOCK_CI = max(16, min(32, triton.next_power_of_2(C_in)))
        BLOCK_CO = 16
        grid = (N * H, triton.cdiv(W, BLOCK_W), triton.cdiv(C_out, BLOCK_CO))
        _conv2d_hardswish_kernel[grid](
            x,
            w,
            self.conv.bias,
            out,
            C_in,
            H,
            W,
            C_out,
            KS=KS,
            BLOCK_W=BLOCK_W,
            BLOCK_CI=BLOCK_CI,
            BLOCK_CO=BLOCK_CO,
            num_warps=1,
            num_stages=1,
        )
        return out
