"""forward(self, input, residual), as torch's own modules name it; bf16 in and out, fp32 inside."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add_rmsnorm_kernel(x_ptr, r_ptr, w_ptr, out_ptr, n_cols, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    r = tl.load(r_ptr + row * stride + cols, mask=mask, other=0.0)
    hidden = (x + r).to(tl.float32)  # the sum rounded to bf16 first, as the task adds in bf16
    variance = tl.sum(hidden * hidden, axis=0) / n_cols
    normed = (hidden * tl.rsqrt(variance + eps)).to(tl.bfloat16)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * stride + cols, (w.to(tl.float32) * normed.to(tl.float32)).to(tl.bfloat16), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter((1.0 + 0.1 * torch.randn(hidden_size)).to(torch.bfloat16))
        self.eps = eps

    def forward(self, input: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        input = input.contiguous()
        residual = residual.contiguous()
        n_cols = input.shape[-1]
        out = torch.empty_like(input)
        rows = input.numel() // n_cols
        _add_rmsnorm_kernel[(rows,)](
            input, residual, self.weight, out, n_cols, n_cols, self.eps, BLOCK=triton.next_power_of_2(n_cols)
        )
        return out
