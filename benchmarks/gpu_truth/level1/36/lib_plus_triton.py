# RMSNorm over dim 1, PyTorch computes the rms tensor (torch.mean of x**2, sqrt), a Triton kernel divides x by it with broadcasting.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def divide_kernel(x_ptr, rms_ptr, y_ptr, F, S, BLOCK: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    pid = tl.program_id(1)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < F * S
    s = offs % S
    x = tl.load(x_ptr + b * F * S + offs, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(rms_ptr + b * S + s, mask=mask, other=1.0).to(tl.float32)
    tl.store(y_ptr + b * F * S + offs, x / r, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        B, F = x.shape[0], x.shape[1]
        S = x.numel() // (B * F)
        rms = torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.eps).contiguous()
        y = torch.empty_like(x)
        BLOCK = 2048
        divide_kernel[(B, triton.cdiv(F * S, BLOCK))](x, rms, y, F, S, BLOCK=BLOCK, num_warps=4)
        return y
