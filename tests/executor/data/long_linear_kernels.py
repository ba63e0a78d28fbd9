"""Kernels for long_linear_task.py: one Triton GEMM whose dot precision is `{precision}`, with the operands split
into tf32 high and low halves by a separate pass when `{split}` is True (three tf32 products chained on one
accumulator, as assistants write a hand-made 3xTF32). `kernel(precision, split)` gives the module's text."""

TEMPLATE = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _split(src, hi, lo, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(src + offs, mask=mask, other=0.0)
    h = ((v.to(tl.uint32, bitcast=True) + 0x1000) & 0xFFFFE000).to(tl.float32, bitcast=True)
    tl.store(hi + offs, h, mask=mask)
    tl.store(lo + offs, v - h, mask=mask)


@triton.jit
def _linear(xh, xl, wh, wl, out, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
            SPLIT: tl.constexpr, PRECISION: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        am = (rm[:, None] < M) & ((k + rk)[None, :] < K)
        bm = ((k + rk)[:, None] < K) & (rn[None, :] < N)
        a_off = rm[:, None] * K + (k + rk)[None, :]
        b_off = rn[None, :] * K + (k + rk)[:, None]
        a_hi = tl.load(xh + a_off, mask=am, other=0.0)
        b_hi = tl.load(wh + b_off, mask=bm, other=0.0)
        if SPLIT:
            a_lo = tl.load(xl + a_off, mask=am, other=0.0)
            b_lo = tl.load(wl + b_off, mask=bm, other=0.0)
            acc = tl.dot(a_lo, b_hi, acc, input_precision=PRECISION)
            acc = tl.dot(a_hi, b_lo, acc, input_precision=PRECISION)
        acc = tl.dot(a_hi, b_hi, acc, input_precision=PRECISION)
    tl.store(out + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _halves(t):
    t = t.contiguous()
    hi, lo = torch.empty_like(t), torch.empty_like(t)
    _split[(triton.cdiv(t.numel(), 1024),)](t, hi, lo, t.numel(), BLOCK=1024)
    return hi, lo


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(out_features, in_features))

    def forward(self, x):
        w = self.weight
        M, K = x.shape
        N = w.shape[0]
        (xh, xl), (wh, wl) = (_halves(x), _halves(w)) if {split} else ((x.contiguous(), x), (w.contiguous(), w))
        out = torch.empty((M, N), device=x.device, dtype=torch.float32)
        grid = (triton.cdiv(M, 16), triton.cdiv(N, 16))
        _linear[grid](xh, xl, wh, wl, out, M, N, K, BM=16, BN=16, BK=32, SPLIT={split},
                      PRECISION="{precision}")
        return out
"""


def kernel(precision: str, split: bool) -> str:
    return TEMPLATE.replace("{precision}", precision).replace("{split}", str(split))
