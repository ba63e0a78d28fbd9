# rule: You cannot call tl.dot on 1-D blocks (a vector dot product); use tl.sum(a * b) for vectors, or give tl.dot 2-D tiles.
# task: matmul
# backend: compile
# status: compile_error

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _kernel(a_ptr, b_ptr, c_ptr, M, N, K, BK: tl.constexpr):
    m = tl.program_id(0)
    n = tl.program_id(1)
    rk = tl.arange(0, BK)
    a = tl.load(a_ptr + m * K + rk, mask=rk < K, other=0.0)
    b = tl.load(b_ptr + rk * N + n, mask=rk < K, other=0.0)
    tl.store(c_ptr + m * N + n, tl.dot(a, b))


class ModelNew(nn.Module):
    def __init__(self, k: int, n: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(k, n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x, w = x.contiguous(), self.weight.contiguous()
        (M, K), N = x.shape, w.shape[1]
        c = torch.empty((M, N), device=x.device, dtype=torch.float32)
        _kernel[(M, N)](x, w, c, M, N, K, BK=triton.next_power_of_2(K))
        return c
