"""GEMMs for KernelBench Level 2 problem 12 (x @ W^T + b, times a multiplier, LeakyReLU) whose fp32 operands are
split into a high and a low half in bf16 or fp16, multiplied on the tensor cores and summed in fp32: the split
products that assistants write to pass strict mode's fp32 tolerance at twice the tf32x3 rate, and ways of getting
them wrong. `kernel(dtype, split, products, accumulate)` gives the module's text:

- `dtype`: "bfloat16" or "float16", the halves' type;
- `split`: "round" (each half rounded to nearest) or "trunc" (each half cut toward zero);
- `products`: 3 (lo.hi + hi.lo + hi.hi) or 2 (x's low half times W's high half left out);
- `accumulate`: "fresh" (each K step's products summed into a fresh accumulator, small ones first, then added to
  the running sum on the CUDA cores, as Triton's own tf32x3 does) or "chained" (every product added straight to
  one running accumulator on the tensor cores, as most hand-made 3xTF32 GEMMs do).

`HONEST` and `LOSSY` name the variants; `tests/executor/test_speed_and_precision.py` judges two of them, and
`benchmarks/precision_at_length.py` all of them, on a GPU or on the CPU path.
"""

from __future__ import annotations

TEMPLATE = """
# split-precision GEMM: {dtype} halves, {split} split, {products} products per term, {accumulate} accumulation
import torch
import torch.nn as nn
import triton
import triton.language as tl

HALF = tl.{dtype}


@triton.jit
def _split(src, hi, lo, n, BLOCK: tl.constexpr, TRUNC: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(src + offs, mask=mask, other=0.0)
    if TRUNC:
        h = v.to(HALF, fp_downcast_rounding="rtz")
        l = (v - h.to(tl.float32)).to(HALF, fp_downcast_rounding="rtz")
    else:
        h = v.to(HALF)
        l = (v - h.to(tl.float32)).to(HALF)
    tl.store(hi + offs, h, mask=mask)
    tl.store(lo + offs, l, mask=mask)


@triton.jit
def _gemm(xh, xl, wh, wl, bias, out, M, N, K, multiplier, slope, BM: tl.constexpr, BN: tl.constexpr,
          BK: tl.constexpr, THREE: tl.constexpr, FRESH: tl.constexpr):
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
        a_lo = tl.load(xl + a_off, mask=am, other=0.0)
        b_hi = tl.load(wh + b_off, mask=bm, other=0.0)
        b_lo = tl.load(wl + b_off, mask=bm, other=0.0)
        if FRESH:
            part = tl.dot(a_hi, b_lo)
            if THREE:
                part = tl.dot(a_lo, b_hi, part)
            part = tl.dot(a_hi, b_hi, part)
            acc += part
        else:
            acc = tl.dot(a_hi, b_lo, acc)
            if THREE:
                acc = tl.dot(a_lo, b_hi, acc)
            acc = tl.dot(a_hi, b_hi, acc)
    y = (acc + tl.load(bias + rn, mask=rn < N, other=0.0)[None, :]) * multiplier
    y = tl.where(y >= 0, y, y * slope)
    tl.store(out + rm[:, None] * N + rn[None, :], y, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _halves(t):
    t = t.contiguous()
    hi = torch.empty(t.shape, device=t.device, dtype=torch.{dtype})
    lo = torch.empty_like(hi)
    _split[(triton.cdiv(t.numel(), 1024),)](t, hi, lo, t.numel(), BLOCK=1024, TRUNC={trunc})
    return hi, lo


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = float(multiplier)
        self.negative_slope = float(negative_slope)

    def forward(self, x):
        w = self.gemm.weight
        M, K = x.shape
        N = w.shape[0]
        (xh, xl), (wh, wl) = _halves(x), _halves(w)
        out = torch.empty((M, N), device=x.device, dtype=torch.float32)
        grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
        _gemm[grid](xh, xl, wh, wl, self.gemm.bias, out, M, N, K, self.multiplier, self.negative_slope,
                    BM=64, BN=64, BK=32, THREE={three}, FRESH={fresh}, num_warps=4)
        return out
"""

# name: (dtype, split, products, accumulate)
HONEST = {
    "bf16x3": ("bfloat16", "round", 3, "fresh"),
    "fp16x3": ("float16", "round", 3, "fresh"),
}
LOSSY = {
    "bf16x3_chained": ("bfloat16", "round", 3, "chained"),
    "fp16x3_chained": ("float16", "round", 3, "chained"),
    "bf16x3_truncated": ("bfloat16", "trunc", 3, "fresh"),
    "bf16x2": ("bfloat16", "round", 2, "fresh"),
}


def kernel(dtype: str, split: str, products: int, accumulate: str) -> str:
    if dtype not in ("bfloat16", "float16") or split not in ("round", "trunc") or products not in (2, 3):
        raise ValueError(f"no such variant: {dtype}, {split}, {products}")
    if accumulate not in ("fresh", "chained"):
        raise ValueError(f"no such accumulation: {accumulate}")
    return (
        TEMPLATE.replace("{dtype}", dtype)
        .replace("{split}", split)
        .replace("{products}", str(products))
        .replace("{accumulate}", accumulate)
        .replace("{trunc}", str(split == "trunc"))
        .replace("{three}", str(products == 3))
        .replace("{fresh}", str(accumulate == "fresh"))
    )
