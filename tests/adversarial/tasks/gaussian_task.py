"""exp(-x^2 / 2): a task an approximate exponential computes within float32's tolerance."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.exp(-0.5 * x * x)


rows = 64
cols = 1024
SMALL_SIZES = {"rows": 4, "cols": 256}


def get_inputs():
    return [torch.randn(rows, cols) * 3.0]


def get_init_inputs():
    return []
