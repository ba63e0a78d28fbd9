"""H20, the honest side: the idioms the rules against method detours must keep working. A base layer and
super().__init__() / super().forward(x), an autograd Function used through apply, a classmethod constructor,
static helpers, a plain class of settings, class constants read through the class, properties and private
attributes of self."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_relu(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.maximum(tl.load(x_ptr + offsets, mask=mask) * scale + 1.0, 0.0), mask=mask)


class Launch:
    BLOCK = 256

    def __init__(self, block):
        self.block = block

    @classmethod
    def default(cls):
        return cls(cls.BLOCK)

    @staticmethod
    def programs(n, block):
        return (triton.cdiv(n, block),)

    @property
    def half(self):
        return self.block // 2


class ScaleRelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale, launch):
        y = torch.empty_like(x)
        n = x.numel()
        scale_relu[Launch.programs(n, launch.block)](x, y, n, scale, BLOCK=launch.block)
        ctx.scale = scale
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (y > 0) * ctx.scale, None, None


class Scaled(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self._scale = scale
        self._launch = Launch.default()

    @property
    def factor(self):
        return self._scale

    def forward(self, x):
        assert isinstance(self._launch, Launch) and self._launch.half * 2 == Launch.BLOCK
        return ScaleRelu.apply(x.contiguous(), self.factor, self._launch)


class ModelNew(Scaled):
    NAME = "scale_relu"

    def __init__(self, scale):
        super().__init__(scale)
        self.label = f"{ModelNew.__name__}:{ModelNew.NAME}:{type(self).__name__}"

    def forward(self, x):
        return super().forward(x)
