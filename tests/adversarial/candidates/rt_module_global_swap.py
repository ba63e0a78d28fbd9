"""Runtime guard: with the static rules off, a module the timer holds as a global (statistics) is replaced
by an object whose median is a small number: no code of the timer changes, only what one of its names
holds."""

import statistics
import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl


class Fast:
    def median(self, values):
        return 1e-4 if len(values) > 8 else statistics.median(values)

    def __getattr__(self, name):
        return getattr(statistics, name)


sys.modules["adaexplore.executor.worker.timing._timing"].statistics = Fast()


@triton.jit
def scale_relu(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.maximum(tl.load(x_ptr + offsets, mask=mask) * scale + 1.0, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        y = torch.empty_like(x)
        scale_relu[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), self.scale, BLOCK=256)
        return y
