"""KernelBench Level 2 problem 12 (Gemm_Multiply_LeakyReLU) at its full sizes, with the small sizes the CPU checks
run at written out: a GEMM whose reduction is 8192 long (in_features), the task of the split-precision kernels in
split_gemm_kernels.py."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.leaky_relu = nn.LeakyReLU(negative_slope)

    def forward(self, x):
        x = self.gemm(x)
        x = x * self.multiplier
        x = self.leaky_relu(x)
        return x


batch_size = 1024
in_features = 8192
out_features = 8192
multiplier = 2.0
negative_slope = 0.1
SMALL_SIZES = {"batch_size": 2, "in_features": 17, "out_features": 17}


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, multiplier, negative_slope]
