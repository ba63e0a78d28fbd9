"""Sum of a 3-D tensor over one dimension (dim 1 here), keeping the reduced dimension."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)


# Sizes for the GPU: (batch, reduce, inner), 2 GiB of input.
batch_size = 128
reduce_size = 2048
inner_size = 512
reduce_dim = 1

# Small sizes for CPU checks in the Triton interpreter.
SMALL_SIZES = {"batch_size": 3, "reduce_size": 70, "inner_size": 37}


def get_inputs():
    return [torch.randn(batch_size, reduce_size, inner_size)]


def get_init_inputs():
    return [reduce_dim]
