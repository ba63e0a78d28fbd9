"""H21 (honest): tensor descriptors and cache hints, which the interpreter's bounds checker once refused."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_relu_kernel(x_ptr, y_ptr, M, N, scale, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    xd = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    yd = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    x = xd.load([pid * BM, 0])
    yd.store([pid * BM, 0], tl.maximum(x * scale + 1.0, 0.0))


@triton.jit
def cg_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, cache_modifier=".cg")
    tl.store(y_ptr + offsets, x, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        y = torch.empty_like(x)
        M, N = x.shape
        P = (N + 3) // 4 * 4
        xp = torch.zeros(M, P, device=x.device, dtype=x.dtype)
        xp[:, :N] = x
        yp = torch.empty_like(xp)
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=x.device))
        scale_relu_kernel[(triton.cdiv(M, 16),)](xp, yp, M, P, self.scale, BM=16, BN=triton.next_power_of_2(P))
        y = yp[:, :N].contiguous()
        z = torch.empty_like(y)
        cg_kernel[(triton.cdiv(y.numel(), 256),)](y, z, y.numel(), BLOCK=256)
        return z
