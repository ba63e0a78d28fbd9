"""Locals and parameters that share a builtin's name (input, type, id, format) inside their own functions,
a closure over one of them, and a comprehension over another."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scale_relu_kernel(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask) * scale + 1.0, 0.0), mask=mask)


def launch(input: torch.Tensor, scale: float, *, type: str = "relu", id: int = 0) -> torch.Tensor:
    assert type == "relu" and id >= 0
    input = input.contiguous()
    output = torch.empty_like(input)

    def grid(meta):
        return (triton.cdiv(input.numel(), meta["BLOCK"]),)

    _scale_relu_kernel[grid](input, output, input.numel(), scale, BLOCK=256)
    return output


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        format = "relu"
        shapes = [tuple(input.shape) for input in (input,)]
        assert len(shapes) == 1
        return launch(input, self.scale, type=format)
