"""Scales and shifts a 2-D tensor, applies exact (erf) GELU, then gates the result with its own sigmoid."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, scale: float, shift: float):
        super().__init__()
        self.scale = scale
        self.shift = shift

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * self.scale + self.shift
        y = F.gelu(y)
        return y * torch.sigmoid(y)


# Sizes for the GPU.
batch_size = 4096
dim = 8192
scale = 2.0
shift = 0.5

# Small sizes for CPU checks in the Triton interpreter.
SMALL_SIZES = {"batch_size": 37, "dim": 53}


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [scale, shift]
