"""x * a + y * b, with x and y passed together as one list argument (as some model code passes them)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, pair: list[torch.Tensor], a: float, b: int) -> torch.Tensor:
        x, y = pair
        return x * a + y * b


rows = 32
cols = 256
SMALL_SIZES = {"rows": 4, "cols": 32}


def get_inputs():
    return [[torch.randn(rows, cols), torch.randn(rows, cols)], 0.5, 3]


def get_init_inputs():
    return []
