"""Runtime guard: with the static rules off, the worker's own launch counter is replaced so that a forward
with no Triton kernel reports one launch."""

import sys

import torch
import torch.nn as nn

tracker = sys.modules["adaexplore.executor.worker.candidate._launches"].LaunchTracker


def forged_count(self, call):
    result = call()
    self.kernels.add("fused_scale_relu")
    return result, ["fused_scale_relu"]


tracker.count = forged_count


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.relu(x * self.scale + 1.0)
