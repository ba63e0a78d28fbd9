"""y = relu(x * scale + 1) on a small 2-D tensor: the task the elementwise reproducers run against."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x * self.scale + 1.0)


rows = 4
cols = 100
SMALL_SIZES = {"rows": 3, "cols": 77}


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return [2.0]
