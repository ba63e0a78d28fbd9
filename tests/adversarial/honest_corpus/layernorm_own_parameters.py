"""Its own weight and bias, drawn as the task draws them, eps as a buffer, Optional type hints."""

# ruff: noqa: UP045  (Optional is the style under test)

from typing import Optional

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, stride, eps, HAS_BIAS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    centered = tl.where(mask, x - mean, 0.0)
    y = centered * tl.rsqrt(tl.sum(centered * centered, axis=0) / n_cols + eps)
    y = y * tl.load(w_ptr + cols, mask=mask, other=0.0)
    if HAS_BIAS:
        y += tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * stride + cols, y, mask=mask)


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], eps: float) -> torch.Tensor:
    rows = x.reshape(-1, x.shape[-1]).contiguous()
    out = torch.empty_like(rows)
    block = triton.next_power_of_2(rows.shape[1])
    _layernorm_kernel[(rows.shape[0],)](
        rows,
        weight,
        bias if bias is not None else weight,
        out,
        rows.shape[1],
        rows.stride(0),
        eps,
        HAS_BIAS=bias is not None,
        BLOCK=block,
    )
    return out.view(x.shape)


class ModelNew(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-5, bias: bool = True) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.bias: Optional[nn.Parameter] = nn.Parameter(torch.zeros(hidden_size)) if bias else None
        self.register_buffer("eps_value", torch.tensor(eps), persistent=False)
        self.eps = eps
        # the task's draws, in its order
        with torch.no_grad():
            self.weight.normal_(1.0, 0.1)
            if self.bias is not None:
                self.bias.normal_(0.0, 0.1)

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return layer_norm(x, self.weight, self.bias, self.eps)
