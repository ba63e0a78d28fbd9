"""x @ w for small float32 matrices: the task the matrix reproducers run against."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, k: int, n: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(k, n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight


m = 64
k = 64
n = 64
SMALL_SIZES = {"m": 48, "k": 64, "n": 40}


def get_inputs():
    return [torch.randn(m, k)]


def get_init_inputs():
    return [k, n]
