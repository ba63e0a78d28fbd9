"""Adds a residual to a bf16 hidden state and applies RMSNorm with a learnable weight, in bf16."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        # A weight away from the default ones, so that ignoring it shows.
        self.weight = nn.Parameter((1.0 + 0.1 * torch.randn(hidden_size)).to(torch.bfloat16))
        self.eps = eps

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        hidden = x + residual
        # Normalize in fp32 as real implementations do, then return to the input dtype.
        h32 = hidden.float()
        variance = h32.pow(2).mean(dim=-1, keepdim=True)
        h32 = h32 * torch.rsqrt(variance + self.eps)
        return self.weight * h32.to(hidden.dtype)


# Sizes for the GPU.
batch_size = 8192
hidden_size = 4096

# Small sizes for CPU checks in the Triton interpreter.
SMALL_SIZES = {"batch_size": 5, "hidden_size": 300}


def get_inputs():
    x = torch.randn(batch_size, hidden_size, dtype=torch.bfloat16)
    residual = torch.randn(batch_size, hidden_size, dtype=torch.bfloat16)
    return [x, residual]


def get_init_inputs():
    return [hidden_size]
