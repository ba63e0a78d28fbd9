"""The error of each way to take an fp32 matrix product on a GPU, emulated on the CPU at a task's full reduction
length: the numbers behind the speed of light's precision paths (`adaexplore/roofline/_sol.py`).

    python benchmarks/split_precision.py [--k 8192] [--n 8192] [--rows 128] [--paths bf16x3,fp16] [--json OUT]

For a Linear layer of KernelBench's kind (x of `torch.rand` or `torch.randn`, the weight and bias of
`nn.Linear`'s initialization, uniform in +-1/sqrt(K)), each path rounds the operands as the hardware or a
kernel would, takes its products exactly (a product of two bf16, fp16 or tf32 numbers is exact in fp32) and
accumulates them in fp32 one K-block of 32 at a time, as a Triton GEMM's accumulator does; the result goes through
Level 2 problem 12's epilogue (times 2, LeakyReLU 0.1) and is held to strict mode's float32 tolerance against a
float64 reference: per element |err| <= 1e-4 rms(ref) + 1e-4 |ref|, and ||err|| <= 2e-5 ||ref||. `rows` of the
M rows are computed (every output element of a row is an independent draw of the same error). Prints one line per
path: the normwise error, the worst element's share of its allowance, and whether strict's fp32 tolerance and
its tf32 row (5e-3, 5e-3, normwise 2e-3) pass.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable
from pathlib import Path

import torch

Round = Callable[[torch.Tensor], torch.Tensor]
BLOCK_K = 32


def _bits(t: torch.Tensor, mask: int, add: int = 0) -> torch.Tensor:
    u = t.to(torch.float32).view(torch.int32).to(torch.int64)
    u = ((u + add) & mask) & 0xFFFFFFFF
    u = torch.where(u >= 2**31, u - 2**32, u).to(torch.int32)
    return u.view(torch.float32).to(torch.float64)


def bf16(t: torch.Tensor) -> torch.Tensor:  # round to nearest even, as `.to(tl.bfloat16)` does
    return t.to(torch.float32).to(torch.bfloat16).to(torch.float64)


def bf16_truncated(t: torch.Tensor) -> torch.Tensor:  # the high 16 bits kept: a split by masking
    return _bits(t, 0xFFFF0000)


def fp16(t: torch.Tensor) -> torch.Tensor:  # round to nearest even, subnormals kept
    return t.to(torch.float32).to(torch.float16).to(torch.float64)


def tf32(t: torch.Tensor) -> torch.Tensor:  # round to nearest, ties away (cvt.rna.tf32.f32, Triton's split)
    return _bits(t, 0xFFFFE000, 0x1000)


def tf32_truncated(t: torch.Tensor) -> torch.Tensor:  # the low 13 bits dropped (fp32 bits fed as they are)
    return _bits(t, 0xFFFFE000)


def fp8(t: torch.Tensor) -> torch.Tensor:  # e4m3, the tensor scaled so that its largest magnitude is 448
    scale = 448.0 / t.abs().max()
    return (t * scale).to(torch.float32).to(torch.float8_e4m3fn).to(torch.float64) / scale


def split(round_: Round) -> Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    def parts(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hi = round_(t)
        return hi, round_(t - hi)

    return parts


def accumulate(products: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
    """sum over products of a @ b.T, each block of BLOCK_K taken exactly and added to an fp32 accumulator."""
    m, k = products[0][0].shape
    acc = torch.zeros(m, products[0][1].shape[0], dtype=torch.float32)
    for k0 in range(0, k, BLOCK_K):
        for a, b in products:
            block = a[:, k0 : k0 + BLOCK_K] @ b[:, k0 : k0 + BLOCK_K].T
            acc = (acc.to(torch.float64) + block).to(torch.float32)
    return acc.to(torch.float64)


def ieee(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return accumulate([(x, w)])


def single(round_: Round) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    return lambda x, w: accumulate([(round_(x), round_(w))])


def three(round_: Round) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    parts = split(round_)

    def product(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        (xh, xl), (wh, wl) = parts(x), parts(w)
        return accumulate([(xl, wh), (xh, wl), (xh, wh)])

    return product


def three_scaled(round_: Round, scale: float) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """three products with the weight scaled by a power of two before its split (exact), undone on the result:
    the weight's low parts stay out of fp16's subnormals."""
    inner = three(round_)
    return lambda x, w: inner(x, w * scale) / scale


def two(round_: Round) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """x split, the weight taken in one part: x_hi w_hi + x_lo w_hi (the weight's low part dropped)."""
    parts = split(round_)

    def product(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        (xh, xl), wh = parts(x), round_(w)
        return accumulate([(xl, wh), (xh, wh)])

    return product


PATHS: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "ieee (fp32 CUDA cores)": ieee,
    "tf32x3": three(tf32),
    "fp16x3": three(fp16),
    "fp16x3, weight scaled by 2^8": three_scaled(fp16, 256.0),
    "bf16x3": three(bf16),
    "bf16x3, truncating split": three(bf16_truncated),
    "bf16x2 (weight's low part dropped)": two(bf16),
    "tf32 (rounded)": single(tf32),
    "tf32 (truncated)": single(tf32_truncated),
    "fp16": single(fp16),
    "bf16": single(bf16),
    "fp8 e4m3 (scaled)": single(fp8),
}
# strict mode's rows: (atol as a multiple of rms(ref), rtol, normwise rtol)
FP32 = (1e-4, 1e-4, 2e-5)
TF32 = (5e-3, 5e-3, 2e-3)


def judge(out: torch.Tensor, ref: torch.Tensor, row: tuple[float, float, float]) -> tuple[float, float, bool]:
    """(normwise error, the worst element's error over its allowance, passes)."""
    atol, rtol, norm = row
    err = (out - ref).abs()
    allowance = atol * ref.pow(2).mean().sqrt() + rtol * ref.abs()
    normwise = float(err.norm() / ref.norm())
    worst = float((err / allowance).max())
    return normwise, worst, normwise <= norm and worst <= 1


def epilogue(y: torch.Tensor) -> torch.Tensor:  # Level 2 problem 12: times 2, LeakyReLU 0.1
    y = y * 2.0
    return torch.where(y >= 0, y, y * 0.1)


def run(k: int, n: int, rows: int, draw: str, seed: int, only: list[str]) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    bound = 1 / math.sqrt(k)
    shape = (rows, k)
    x = torch.rand(shape, generator=g) if draw == "rand" else torch.randn(shape, generator=g)
    w = (torch.rand(n, k, generator=g) * 2 - 1) * bound
    b = (torch.rand(n, generator=g) * 2 - 1) * bound
    x64, w64, b64 = x.to(torch.float64), w.to(torch.float64), b.to(torch.float64)
    ref = epilogue(x64 @ w64.T + b64)
    out = []
    for name, path in PATHS.items():
        if only and not any(part in name for part in only):
            continue
        started = time.perf_counter()
        y = (path(x64, w64).to(torch.float32) + b).to(torch.float64)
        got = epilogue(y.to(torch.float32).to(torch.float64))
        normwise, worst, fp32_ok = judge(got, ref, FP32)
        _, tf32_worst, tf32_ok = judge(got, ref, TF32)
        out.append(
            {
                "draw": draw,
                "k": k,
                "path": name,
                "normwise": normwise,
                "fp32_worst": worst,
                "fp32_ok": fp32_ok,
                "tf32_worst": tf32_worst,
                "tf32_ok": tf32_ok,
                "seconds": round(time.perf_counter() - started, 1),
            }
        )
        print(
            f"{draw:6} K={k:<6} {name:38} normwise {normwise:9.3g}  fp32 worst {worst:9.3g} "
            f"{'pass' if fp32_ok else 'FAIL'}  tf32 worst {tf32_worst:8.3g} {'pass' if tf32_ok else 'FAIL'}",
            flush=True,
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--k", type=int, default=8192, help="the reduction length (in_features)")
    parser.add_argument("--n", type=int, default=8192, help="out_features")
    parser.add_argument("--rows", type=int, default=128, help="rows of x computed")
    parser.add_argument("--draws", default="rand,randn", help="the distributions of x: rand, randn")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--paths", default="", help="comma-separated parts of path names to run (default: all)")
    parser.add_argument("--json", type=Path, help="write the rows here too")
    args = parser.parse_args()
    torch.set_num_threads(2)
    rows = []
    for draw in args.draws.split(","):
        rows.extend(run(args.k, args.n, args.rows, draw, args.seed, [p for p in args.paths.split(",") if p]))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
