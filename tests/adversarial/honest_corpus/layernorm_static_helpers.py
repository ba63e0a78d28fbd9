"""A launcher class of static methods and a classmethod, nn.LayerNorm kept as a submodule, @torch.no_grad()."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    centered = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centered * centered, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * stride + cols, centered * rstd * w + b, mask=mask)


class RowLauncher:
    MAX_WARPS = 8

    def __init__(self, num_warps: int):
        self.num_warps = num_warps

    @classmethod
    def for_width(cls, n_cols: int) -> "RowLauncher":
        return cls(cls.MAX_WARPS if n_cols >= 2048 else 4)

    @staticmethod
    def block(n_cols: int) -> int:
        return triton.next_power_of_2(n_cols)


class ModelNew(nn.Module):
    def __init__(self, hidden_size: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden_size)
        with torch.no_grad():
            self.norm.weight.normal_(1.0, 0.1)
            self.norm.bias.normal_(0.0, 0.1)
        self.launcher = RowLauncher.for_width(hidden_size)

    @torch.no_grad()
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.contiguous().view(-1, x.shape[-1])
        out = torch.empty_like(rows)
        n_cols = rows.shape[1]
        _layernorm_kernel[(rows.shape[0],)](
            rows,
            self.norm.weight,
            self.norm.bias,
            out,
            n_cols,
            rows.stride(0),
            self.norm.eps,
            BLOCK=RowLauncher.block(n_cols),
            num_warps=self.launcher.num_warps,
        )
        return out.view_as(x)
