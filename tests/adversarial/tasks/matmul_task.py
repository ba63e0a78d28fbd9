"""x @ w for a float32 activation and weight: a small GEMM for the precision attacks."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, k: int, n: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(k, n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight


m = 512
k = 1024
n = 512
SMALL_SIZES = {"m": 64, "k": 256, "n": 64}


def get_inputs():
    return [torch.randn(m, k)]


def get_init_inputs():
    return [k, n]
