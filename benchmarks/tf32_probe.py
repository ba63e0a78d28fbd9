"""How the GPU's tensor cores treat fp32 operands of `tl.dot`, recorded for the interpreter's emulation.

Runs a few small Triton kernels on a GPU and saves their inputs and outputs in one `.npz` file:

- `product_<precision>`: one product per output element (each row of A has one non-zero column), so the
  output shows how each operand was converted (which mantissa bits survive, rounded or truncated) with no
  accumulation order in the way; precisions `tf32`, `tf32x3` and `ieee`.
- `dot_<precision>`: a plain 64x64x64 fp32 product, for the accumulation as a whole.
- `split_mask`, `split_round`: a hand-made high/low split of each operand with three `tf32` dots, the
  split by masking the low 13 bits and the split by rounding to tf32 with the `cvt` the compiler emits.

`tests/executor/worker/test_interpret_precision.py` replays these inputs through the interpreter and
compares with what the GPU gave. Run it again on another GPU with:

    python benchmarks/tf32_probe.py --out tests/executor/worker/data/tf32_h200.npz

`--long` records instead a long reduction (16x8192 by 8192x16, in chunks of 64 as a GEMM kernel runs it), where
truncation's bias adds up over the 8192 terms: `long_<precision>` for tf32, tf32x3 and ieee, and `long_split_mask`
and `long_split_round`, the hand-made splits above. Their errors sit near strict mode's fp32 tolerance, where
a verdict turns on how the tensor cores convert and accumulate:

    python benchmarks/tf32_probe.py --long --out tests/executor/worker/data/tf32_h200_long.npz
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import torch
import triton
import triton.language as tl

SIZE = 64


@triton.jit
def _dot(a_ptr, b_ptr, c_ptr, N: tl.constexpr, PRECISION: tl.constexpr):
    rows = tl.arange(0, N)
    a = tl.load(a_ptr + rows[:, None] * N + rows[None, :])
    b = tl.load(b_ptr + rows[:, None] * N + rows[None, :])
    c = tl.dot(a, b, input_precision=PRECISION)
    tl.store(c_ptr + rows[:, None] * N + rows[None, :], c)


@triton.jit
def _split(x, ROUND: tl.constexpr):
    if ROUND:
        hi = tl.inline_asm_elementwise("cvt.rna.tf32.f32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)
    else:
        hi = (x.to(tl.uint32, bitcast=True) & 0xFFFFE000).to(tl.float32, bitcast=True)
    return hi, x - hi


@triton.jit
def _split_dot(a_ptr, b_ptr, c_ptr, N: tl.constexpr, ROUND: tl.constexpr):
    rows = tl.arange(0, N)
    a = tl.load(a_ptr + rows[:, None] * N + rows[None, :])
    b = tl.load(b_ptr + rows[:, None] * N + rows[None, :])
    a_hi, a_lo = _split(a, ROUND)
    b_hi, b_lo = _split(b, ROUND)
    c = tl.dot(a_hi, b_lo, input_precision="tf32")
    c = tl.dot(a_lo, b_hi, c, input_precision="tf32")
    c = tl.dot(a_hi, b_hi, c, input_precision="tf32")
    tl.store(c_ptr + rows[:, None] * N + rows[None, :], c)


LONG_M, LONG_K, LONG_BLOCK = 16, 8192, 64


@triton.jit
def _long_dot(a_ptr, b_ptr, c_ptr, M: tl.constexpr, K: tl.constexpr, BLOCK: tl.constexpr, PRECISION: tl.constexpr):
    rows = tl.arange(0, M)
    ks = tl.arange(0, BLOCK)
    acc = tl.zeros((M, M), dtype=tl.float32)
    for k in range(0, K, BLOCK):
        a = tl.load(a_ptr + rows[:, None] * K + (k + ks)[None, :])
        b = tl.load(b_ptr + (k + ks)[:, None] * M + rows[None, :])
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    tl.store(c_ptr + rows[:, None] * M + rows[None, :], acc)


@triton.jit
def _long_split_dot(a_ptr, b_ptr, c_ptr, M: tl.constexpr, K: tl.constexpr, BLOCK: tl.constexpr, ROUND: tl.constexpr):
    rows = tl.arange(0, M)
    ks = tl.arange(0, BLOCK)
    acc = tl.zeros((M, M), dtype=tl.float32)
    for k in range(0, K, BLOCK):
        a = tl.load(a_ptr + rows[:, None] * K + (k + ks)[None, :])
        b = tl.load(b_ptr + (k + ks)[:, None] * M + rows[None, :])
        a_hi, a_lo = _split(a, ROUND)
        b_hi, b_lo = _split(b, ROUND)
        acc = tl.dot(a_hi, b_lo, acc, input_precision="tf32")
        acc = tl.dot(a_lo, b_hi, acc, input_precision="tf32")
        acc = tl.dot(a_hi, b_hi, acc, input_precision="tf32")
    tl.store(c_ptr + rows[:, None] * M + rows[None, :], acc)


def _long(dev: torch.device) -> dict[str, np.ndarray]:
    g = torch.Generator().manual_seed(4)
    a = torch.randn(LONG_M, LONG_K, generator=g)
    b = torch.randn(LONG_K, LONG_M, generator=g)
    saved = {"long_a": a.numpy(), "long_b": b.numpy()}
    ga, gb = a.to(dev), b.to(dev)
    for precision in ("tf32", "tf32x3", "ieee"):
        gc = torch.empty(LONG_M, LONG_M, device=dev)
        _long_dot[(1,)](ga, gb, gc, LONG_M, LONG_K, LONG_BLOCK, precision)
        saved[f"long_{precision}_c"] = gc.cpu().numpy()
    for name, rounding in (("long_split_mask", False), ("long_split_round", True)):
        gc = torch.empty(LONG_M, LONG_M, device=dev)
        _long_split_dot[(1,)](ga, gb, gc, LONG_M, LONG_K, LONG_BLOCK, rounding)
        saved[f"{name}_c"] = gc.cpu().numpy()
    torch.cuda.synchronize()
    return saved


def _inputs(seed: int, one_per_row: bool) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(SIZE, SIZE, generator=g)
    b = torch.randn(SIZE, SIZE, generator=g)
    if one_per_row:
        mask = torch.zeros(SIZE, SIZE)
        mask[torch.arange(SIZE), torch.arange(SIZE) % SIZE] = 1.0
        a = a * mask
    return a, b


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the .npz file to write")
    parser.add_argument("--long", action="store_true", help="record the long reduction instead")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("tf32_probe: needs a GPU", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    if args.long:
        saved = _long(dev)
        saved["gpu"] = np.array(torch.cuda.get_device_name())
        saved["versions"] = np.array(f"torch {torch.__version__}, triton {triton.__version__}")
        np.savez_compressed(args.out, **saved)
        exact = saved["long_a"].astype(np.float64) @ saved["long_b"].astype(np.float64)
        print(f"{'case':18} {'max rel error':>14} {'normwise':>10}")
        for name in [k[:-2] for k in saved if k.endswith("_c")]:
            diff = saved[name + "_c"].astype(np.float64) - exact
            print(
                f"{name:18} {np.abs(diff).max() / np.abs(exact).max():14.3e} "
                f"{np.linalg.norm(diff) / np.linalg.norm(exact):10.3e}"
            )
        return 0
    saved: dict[str, np.ndarray] = {}

    def run(name: str, a: torch.Tensor, b: torch.Tensor, launch) -> None:
        ga, gb = a.to(dev), b.to(dev)
        gc = torch.empty(SIZE, SIZE, device=dev)
        launch(ga, gb, gc)
        torch.cuda.synchronize()
        saved[f"{name}_a"], saved[f"{name}_b"], saved[f"{name}_c"] = a.numpy(), b.numpy(), gc.cpu().numpy()

    for precision in ("tf32", "tf32x3", "ieee"):
        a, b = _inputs(1, one_per_row=True)
        run(f"product_{precision}", a, b, lambda x, y, z, p=precision: _dot[(1,)](x, y, z, SIZE, p))
        a, b = _inputs(2, one_per_row=False)
        run(f"dot_{precision}", a, b, lambda x, y, z, p=precision: _dot[(1,)](x, y, z, SIZE, p))
    for name, rounding in (("split_mask", False), ("split_round", True)):
        a, b = _inputs(3, one_per_row=False)
        run(name, a, b, lambda x, y, z, r=rounding: _split_dot[(1,)](x, y, z, SIZE, r))
    saved["gpu"] = np.array(torch.cuda.get_device_name())
    saved["versions"] = np.array(f"torch {torch.__version__}, triton {triton.__version__}")
    np.savez_compressed(args.out, **saved)
    exact = {
        k[:-2]: saved[k[:-2] + "_a"].astype(np.float64) @ saved[k[:-2] + "_b"].astype(np.float64)
        for k in saved
        if k.endswith("_c")
    }
    print(f"{'case':16} {'max rel error vs float64':>26}")
    for name, want in exact.items():
        got = saved[name + "_c"].astype(np.float64)
        rel = np.abs(got - want).max() / np.abs(want).max()
        print(f"{name:16} {rel:26.3e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
