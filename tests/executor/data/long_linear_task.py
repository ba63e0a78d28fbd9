"""x @ W^T with a long reduction (in_features = 8192, as KernelBench Level 2's GEMMs have), small outputs and
positive operands (so partial sums grow with the reduction): the task of the evaluator's check at full reduction
lengths. SMALL_SIZES shortens the reduction too."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.rand(out_features, in_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight.t()


batch_size = 4
in_features = 8192
out_features = 16
SMALL_SIZES = {"batch_size": 2, "in_features": 32}


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
