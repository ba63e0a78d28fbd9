"""A same-padded 2-D convolution followed by a hardswish activation."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.hardswish(self.conv(x))


# Sizes for the GPU.
batch_size = 128
in_channels = 16
out_channels = 64
height = 64
width = 64
kernel_size = 3

# Small sizes for CPU checks in the Triton interpreter.
SMALL_SIZES = {"batch_size": 2, "in_channels": 3, "out_channels": 10, "height": 5, "width": 11}


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
