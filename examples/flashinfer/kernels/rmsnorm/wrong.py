"""A wrong RMSNorm for the rmsnorm_h4096 / rmsnorm_h8192 definitions: it never applies the weight.

Each row is normalized correctly (float32 sum of squares, rsqrt(mean + 1e-6)) but the result is not
multiplied by `weight`, so it only matches the reference where the weight is 1. With the random
weights of a benchmark it fails any 1e-2 tolerance.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_no_weight_kernel(x_ptr, out_ptr, n_cols, x_row_stride, out_row_stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(out_ptr + row * out_row_stride + cols, (x * rstd).to(tl.bfloat16), mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.eps = 1e-6

    def forward(self, hidden_states: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        x = hidden_states.contiguous()
        batch_size, hidden_size = x.shape
        out = torch.empty((batch_size, hidden_size), dtype=torch.bfloat16, device=x.device)
        if batch_size == 0:
            return out
        BLOCK = triton.next_power_of_2(hidden_size)
        _rmsnorm_no_weight_kernel[(batch_size,)](
            x, out, hidden_size, x.stride(0), out.stride(0), self.eps, BLOCK=BLOCK, num_warps=8
        )
        return out
