"""tan(x) over (-1.5705, 1.5705), near the poles: a task where an approximate tangent fails float32's tolerance."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tan(x)


rows = 64
cols = 1024
SMALL_SIZES = {"rows": 4, "cols": 256}


def get_inputs():
    return [(torch.rand(rows, cols) * 2.0 - 1.0) * 1.5705]


def get_init_inputs():
    return []
