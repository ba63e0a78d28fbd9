# cuBLAS GEMM (fp32, torch.mm) + one Triton kernel per epilogue operation (6 passes over the output), BLOCK 1024, 4 warps [family=lib_epilogue fused=0 block=1024 warps=4]
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _epilogue_0(y_ptr, out_ptr, bias_ptr, n_elements, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n_elements
    y = tl.load(y_ptr + offs, mask=inside, other=0.0)
    y = y + tl.load(bias_ptr + offs % N)
    tl.store(out_ptr + offs, y, mask=inside)


@triton.jit
def _epilogue_1(y_ptr, out_ptr, bias_ptr, n_elements, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n_elements
    y = tl.load(y_ptr + offs, mask=inside, other=0.0)
    y = y * tl.sigmoid(y)
    tl.store(out_ptr + offs, y, mask=inside)


@triton.jit
def _epilogue_2(y_ptr, out_ptr, bias_ptr, n_elements, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n_elements
    y = tl.load(y_ptr + offs, mask=inside, other=0.0)
    y = y / 2.0
    tl.store(out_ptr + offs, y, mask=inside)


@triton.jit
def _epilogue_3(y_ptr, out_ptr, bias_ptr, n_elements, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n_elements
    y = tl.load(y_ptr + offs, mask=inside, other=0.0)
    y = tl.minimum(tl.maximum(y, -1.0), 1.0)
    tl.store(out_ptr + offs, y, mask=inside)


@triton.jit
def _epilogue_4(y_ptr, out_ptr, bias_ptr, n_elements, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n_elements
    y = tl.load(y_ptr + offs, mask=inside, other=0.0)
    y = 2.0 * tl.sigmoid(2.0 * y) - 1.0
    tl.store(out_ptr + offs, y, mask=inside)


@triton.jit
def _epilogue_5(y_ptr, out_ptr, bias_ptr, n_elements, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n_elements
    y = tl.load(y_ptr + offs, mask=inside, other=0.0)
    y = tl.minimum(tl.maximum(y, -1.0), 1.0)
    tl.store(out_ptr + offs, y, mask=inside)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=bias)

    def forward(self, x):
        a = x.contiguous()
        b = self.gemm.weight
        bias = self.gemm.bias.contiguous()
        y = torch.mm(a, b.t())
        n = y.numel()
        N = y.shape[1]
        grid = (triton.cdiv(n, 1024),)
        out = torch.empty_like(y)
        _epilogue_0[grid](y, out, bias, n, N, BLOCK=1024, num_warps=4)
        y = out
        out = torch.empty_like(y)
        _epilogue_1[grid](y, out, bias, n, N, BLOCK=1024, num_warps=4)
        y = out
        out = torch.empty_like(y)
        _epilogue_2[grid](y, out, bias, n, N, BLOCK=1024, num_warps=4)
        y = out
        out = torch.empty_like(y)
        _epilogue_3[grid](y, out, bias, n, N, BLOCK=1024, num_warps=4)
        y = out
        out = torch.empty_like(y)
        _epilogue_4[grid](y, out, bias, n, N, BLOCK=1024, num_warps=4)
        y = out
        out = torch.empty_like(y)
        _epilogue_5[grid](y, out, bias, n, N, BLOCK=1024, num_warps=4)
        y = out
        return y
