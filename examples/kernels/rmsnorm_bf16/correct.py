import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add_rmsnorm_kernel(x_ptr, r_ptr, w_ptr, out_ptr, n_cols, row_stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    offs = row * row_stride + cols
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    h = x + r
    mean_sq = tl.sum(h * h, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(mean_sq + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, (h * rstd * w).to(tl.bfloat16), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        # A weight away from the default ones, so that ignoring it shows.
        self.weight = nn.Parameter((1.0 + 0.1 * torch.randn(hidden_size)).to(torch.bfloat16))
        self.eps = eps

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        residual = residual.contiguous()
        n_cols = x.shape[-1]
        x2 = x.view(-1, n_cols)
        r2 = residual.view(-1, n_cols)
        out = torch.empty_like(x2)
        BLOCK = triton.next_power_of_2(n_cols)
        num_warps = 8 if BLOCK >= 2048 else 4
        _add_rmsnorm_kernel[(x2.shape[0],)](
            x2, r2, self.weight, out, n_cols, x2.stride(0), self.eps, BLOCK=BLOCK, num_warps=num_warps
        )
        return out.view_as(x)
