"""KernelBench's own style: super(ModelNew, self).__init__(), a module-level launcher, docstrings."""

# ruff: noqa: UP008  (KernelBench's super(ModelNew, self) is the style under test)

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def online_softmax_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    """Two passes over the row in blocks: running max and sum, then the normalized values."""
    row_start = tl.program_id(0) * stride
    running_max = tl.full((), -float("inf"), dtype=tl.float32)
    running_sum = tl.full((), 0.0, dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row_start + cols, mask=cols < n_cols, other=-float("inf"))
        new_max = tl.maximum(running_max, tl.max(x, axis=0))
        running_sum = running_sum * tl.exp(running_max - new_max) + tl.sum(tl.exp(x - new_max), axis=0)
        running_max = new_max
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row_start + cols, mask=mask, other=-float("inf"))
        tl.store(out_ptr + row_start + cols, tl.exp(x - running_max) / running_sum, mask=mask)


def triton_softmax(x):
    """Softmax over the last dimension of a contiguous 2-D tensor."""
    out = torch.empty_like(x)
    online_softmax_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), BLOCK=128)
    return out


class ModelNew(nn.Module):
    """
    Softmax over dim=-1, with a Triton kernel.
    """

    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x):
        """
        Args:
            x: Input tensor of shape (batch_size, dim).

        Returns:
            Output tensor of the same shape.
        """
        return triton_softmax(x.contiguous())
