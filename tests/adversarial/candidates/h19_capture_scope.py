"""H19 through a public method that hands out a namespace: a JITFunction's get_capture_scope returns the
globals of the function it wraps, builtins included."""

import torch
import torch.nn as nn
import triton


def _helper():
    return None


_sys = triton.JITFunction(_helper).get_capture_scope()["__builtins__"]["__import__"]("sys")


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.relu(x * self.scale + 1.0)
