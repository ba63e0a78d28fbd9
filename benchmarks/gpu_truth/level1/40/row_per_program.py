# LayerNorm with one program per row (only as many programs as rows): a looped chunked mean/M2 sweep, then a looped normalize+affine sweep.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_row_kernel(x_ptr, w_ptr, b_ptr, y_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * N
    y_row = y_ptr + row * N
    cols = tl.arange(0, BLOCK)
    # running mean / M2, merged chunk by chunk (Chan et al.)
    run_mean = 0.0
    run_m2 = 0.0
    run_n = 0.0
    for start in range(0, N, BLOCK):
        offs = start + cols
        mask = offs < N
        x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
        cnt = tl.minimum(N - start, BLOCK).to(tl.float32)
        cmean = tl.sum(x, axis=0) / cnt
        d = tl.where(mask, x - cmean, 0.0)
        cm2 = tl.sum(d * d, axis=0)
        tot = run_n + cnt
        delta = cmean - run_mean
        run_mean = run_mean + delta * (cnt / tot)
        run_m2 = run_m2 + cm2 + delta * delta * (run_n * cnt / tot)
        run_n = tot
    rstd = 1.0 / tl.sqrt(run_m2 / run_n + eps)
    for start in range(0, N, BLOCK):
        offs = start + cols
        mask = offs < N
        x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + offs, (x - run_mean) * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        N = self.ln.weight.numel()
        rows = x.numel() // N
        y = torch.empty_like(x)
        BLOCK = min(4096, triton.next_power_of_2(N))
        layernorm_row_kernel[(rows,)](x, self.ln.weight.contiguous(), self.ln.bias.contiguous(), y, N,
                                      self.ln.eps, BLOCK=BLOCK, num_warps=8)
        return y
