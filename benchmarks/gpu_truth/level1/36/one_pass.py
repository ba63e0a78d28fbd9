# RMSNorm over dim 1 in one read and one write: each program holds a [features, 128 positions] tile in registers, 8 warps.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rmsnorm_tile_kernel(x_ptr, y_ptr, F, S, eps, BLOCK_F: tl.constexpr, BLOCK_S: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    sb = tl.program_id(1)
    f = tl.arange(0, BLOCK_F)
    s = sb * BLOCK_S + tl.arange(0, BLOCK_S)
    mask = (f[:, None] < F) & (s[None, :] < S)
    offs = b * F * S + f[:, None].to(tl.int64) * S + s[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    ms = tl.sum(x * x, axis=0) / (F * 1.0)
    rms = tl.sqrt(ms + eps)
    y = x / rms[None, :]
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        B, F = x.shape[0], x.shape[1]
        S = x.numel() // (B * F)
        y = torch.empty_like(x)
        BLOCK_F = triton.next_power_of_2(F)
        BLOCK_S = max(16, min(triton.next_power_of_2(S), 8192 // BLOCK_F))
        grid = (B, triton.cdiv(S, BLOCK_S))
        rmsnorm_tile_kernel[grid](x, y, F, S, self.eps, BLOCK_F=BLOCK_F, BLOCK_S=BLOCK_S, num_warps=8)
        return y
