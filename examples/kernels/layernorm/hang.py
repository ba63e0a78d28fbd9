# Hang: every program spins on a flag that nothing ever sets, so the kernel never finishes.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, flag_ptr, n_cols, row_stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    while tl.load(flag_ptr, volatile=True) == 0:
        pass
    tl.store(out_ptr + row * row_stride + cols, diff * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden_size: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden_size)
        # Weights away from the default ones and zeros, so that ignoring them shows.
        with torch.no_grad():
            self.norm.weight.normal_(1.0, 0.1)
            self.norm.bias.normal_(0.0, 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_cols = x.shape[-1]
        x2 = x.view(-1, n_cols)
        out = torch.empty_like(x2)
        flag = torch.zeros(1, dtype=torch.int32, device=x.device)
        BLOCK = triton.next_power_of_2(n_cols)
        num_warps = 8 if BLOCK >= 2048 else 4
        _layernorm_kernel[(x2.shape[0],)](
            x2,
            self.norm.weight,
            self.norm.bias,
            out,
            flag,
            n_cols,
            x2.stride(0),
            self.norm.eps,
            BLOCK=BLOCK,
            num_warps=num_warps,
        )
        return out.view_as(x)
