"""Layer normalization over the last dimension of a (rows, hidden) tensor, with affine weight and bias."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, hidden_size: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden_size)
        # Weights away from the default ones and zeros, so that ignoring them shows.
        with torch.no_grad():
            self.norm.weight.normal_(1.0, 0.1)
            self.norm.bias.normal_(0.0, 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


# Sizes for the GPU.
batch_size = 16384
hidden_size = 4096

# Small sizes for CPU checks in the Triton interpreter.
SMALL_SIZES = {"batch_size": 7, "hidden_size": 300}


def get_inputs():
    return [torch.randn(batch_size, hidden_size)]


def get_init_inputs():
    return [hidden_size]
