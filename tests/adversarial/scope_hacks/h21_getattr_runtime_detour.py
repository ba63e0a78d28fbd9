"""H21: getattr(self, "_private") is allowed on the candidate's own object; reached with another object as self
(the class comes out of a container, out of sight of the static rules), the worker refuses it at run time."""

# ruff: noqa: B009  (getattr with a constant name is the detour under test)

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_relu(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.maximum(tl.load(x_ptr + offsets, mask=mask) * scale + 1.0, 0.0), mask=mask)


# the kernel the compiler would build instead, never seen by the policy
SWAPPED = "@triton.jit\ndef scale_relu(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):\n    pass\n"


class Helper:
    def swap(self, text):
        getattr(self, "_unsafe_update_src")(text)


[type(Helper())][0].swap(scale_relu, SWAPPED)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        y = torch.empty_like(x)
        scale_relu[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), self.scale, BLOCK=256)
        return y
