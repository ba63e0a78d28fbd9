"""A linear layer followed by multiplication with a constant and a LeakyReLU."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int, scale: float, negative_slope: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = x * self.scale
        return F.leaky_relu(x, negative_slope=self.negative_slope)


# Sizes for the GPU.
batch_size = 1024
in_features = 4096
out_features = 4096
scale = 2.0
negative_slope = 0.1

# Small sizes for CPU checks in the Triton interpreter.
SMALL_SIZES = {"batch_size": 37, "in_features": 70, "out_features": 45}


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale, negative_slope]
