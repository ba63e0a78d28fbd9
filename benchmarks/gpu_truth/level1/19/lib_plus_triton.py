# ReLU, PyTorch computes the boolean mask (x > 0), a Triton kernel selects x or zero from it.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def select_kernel(x_ptr, m_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    keep = tl.load(m_ptr + offs, mask=mask, other=0)
    y = tl.where(keep != 0, x, 0.0)
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        keep = (x > 0).view(torch.uint8)
        y = torch.empty_like(x)
        n = x.numel()
        BLOCK = 2048
        grid = (triton.cdiv(n, BLOCK),)
        select_kernel[grid](x, keep, y, n, BLOCK=BLOCK, num_warps=4)
        return y
