"""A plain 2048×2048 fp32 product, for `timing_diag.py`: one cuBLAS kernel of about 0.34 ms on an H200,
nothing on other streams."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a: torch.Tensor) -> torch.Tensor:
        return a @ a


n = 2048

SMALL_SIZES = {"n": 64}


def get_inputs():
    return [torch.randn(n, n)]


def get_init_inputs():
    return []
