"""RMSNorm in Triton for the rmsnorm_h4096 / rmsnorm_h8192 definitions.

One program per row. The row is read in BLOCK-wide chunks twice: the first pass sums x^2 in
float32, the second scales each chunk by rsqrt(mean(x^2) + 1e-6) and the weight and stores it as
bfloat16. Any hidden size works; the chunk size bounds the registers a program needs.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_kernel(x_ptr, w_ptr, out_ptr, n_cols, x_row_stride, out_row_stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride

    sq = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        sq += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(sq, axis=0) / n_cols + eps)

    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_row + cols, (x * rstd * w).to(tl.bfloat16), mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.eps = 1e-6

    def forward(self, hidden_states: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        x = hidden_states.contiguous()
        w = weight.contiguous()
        batch_size, hidden_size = x.shape
        out = torch.empty((batch_size, hidden_size), dtype=torch.bfloat16, device=x.device)
        if batch_size == 0:
            return out
        BLOCK = min(2048, triton.next_power_of_2(hidden_size))
        _rmsnorm_kernel[(batch_size,)](
            x, w, out, hidden_size, x.stride(0), out.stride(0), self.eps, BLOCK=BLOCK, num_warps=8
        )
        return out
