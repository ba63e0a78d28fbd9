"""Rows of a table picked by integer ids, then a ReLU: a task whose only input is an integer tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, rows: int, width: int) -> None:
        super().__init__()
        self.table = nn.Parameter(torch.randn(rows, width))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.table[ids])


rows = 4096
width = 256
count = 2048
SMALL_SIZES = {"rows": 40, "width": 16, "count": 24}


def get_inputs():
    return [torch.randint(0, rows, (count,))]


def get_init_inputs():
    return [rows, width]
