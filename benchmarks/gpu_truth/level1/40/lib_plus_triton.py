# LayerNorm, PyTorch computes per-row mean and variance (torch.var_mean), a Triton kernel applies normalize+affine.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def normalize_kernel(x_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    blk = tl.program_id(1)
    offs = blk * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    mean = tl.load(mean_ptr + row)
    rstd = tl.load(rstd_ptr + row)
    x = tl.load(x_ptr + row * N + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * N + offs, (x - mean) * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        N = self.ln.weight.numel()
        rows = x.numel() // N
        var, mean = torch.var_mean(x.view(rows, N), dim=1, unbiased=False)
        rstd = torch.rsqrt(var + self.ln.eps).contiguous()
        mean = mean.contiguous()
        y = torch.empty_like(x)
        BLOCK = min(2048, triton.next_power_of_2(N))
        normalize_kernel[(rows, triton.cdiv(N, BLOCK))](x, self.ln.weight.contiguous(), self.ln.bias.contiguous(),
                                                        mean, rstd, y, N, BLOCK=BLOCK, num_warps=4)
        return y
