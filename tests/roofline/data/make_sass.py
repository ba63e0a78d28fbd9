"""Writes the SASS (gzipped, as Triton's nvdisasm prints it) and the `ptxas -v` log of a few GEMMs for
tests/roofline and tests/executor/worker, compiled for sm_90 without a GPU:

    python tests/roofline/data/make_sass.py tests/roofline/data tests/executor/worker/data

- gemm_bf16_zeros: bf16 operands, masked loads, the accumulator from tl.zeros: ptxas serializes its wgmma (C7515);
- gemm_bf16_first: the same with the accumulator started from the first product: not serialized;
- gemm_bf16x3_split_in_loop: fp32 tiles split into bf16 high and low parts in registers at every K step by float
  conversions (fp32 -> bf16 -> fp32), three products;
- gemm_bf16x3_split_int_in_loop: the same split by integer rounding of the bits (shifts, masks and adds in place
  of conversions).
"""

import gzip
import io
import subprocess
import sys
import tempfile
from contextlib import redirect_stdout
from pathlib import Path

import torch
import triton
import triton.language as tl
from triton import knobs

from adaexplore.executor.worker.candidate._compile_only import activate_compile_only

activate_compile_only()


@triton.jit
def gemm(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, FIRST: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_off = rm[:, None] * K + rk[None, :]
    b_off = rn[None, :] * K + rk[:, None]  # b read as its transpose, K-major
    if FIRST:
        x = tl.load(a + a_off, mask=rk[None, :] < K, other=0.0)
        acc = tl.dot(x, tl.load(b + b_off, mask=rk[:, None] < K, other=0.0))
        start = BK
    else:
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        start = 0
    for k0 in range(start, K, BK):
        ok = rk < K - k0
        x = tl.load(a + a_off + k0, mask=ok[None, :], other=0.0)
        y = tl.load(b + b_off + k0, mask=ok[:, None], other=0.0)
        acc = tl.dot(x, y, acc)
    tl.store(c + rm[:, None] * N + rn[None, :], acc)


@triton.jit
def _halves(v, BY_BITS: tl.constexpr):
    if BY_BITS:
        # round to the nearest bf16 on the bits: add half an ulp of bf16 (ties to even) and keep the top 16 bits
        bits = v.to(tl.uint32, bitcast=True)
        top = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        hi32 = top.to(tl.float32, bitcast=True)
        hi = (top >> 16).to(tl.uint16).to(tl.bfloat16, bitcast=True)
        rest = (v - hi32).to(tl.uint32, bitcast=True)
        lo = (((rest + 0x7FFF + ((rest >> 16) & 1)) >> 16).to(tl.uint16)).to(tl.bfloat16, bitcast=True)
    else:
        hi = v.to(tl.bfloat16)
        lo = (v - hi.to(tl.float32)).to(tl.bfloat16)
    return hi, lo


@triton.jit
def gemm_split(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, BY_BITS: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a_hi, a_lo = _halves(tl.load(a + rm[:, None] * K + (k0 + rk)[None, :]), BY_BITS)
        b_hi, b_lo = _halves(tl.load(b + (k0 + rk)[:, None] * N + rn[None, :]), BY_BITS)
        acc = tl.dot(a_lo, b_hi, acc)
        acc = tl.dot(a_hi, b_lo, acc)
        acc = tl.dot(a_hi, b_hi, acc)
    tl.store(c + rm[:, None] * N + rn[None, :], acc)


def sass(kernel) -> str:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "k.cubin"
        path.write_bytes(kernel.asm["cubin"])
        return subprocess.run([knobs.nvidia.nvdisasm.path, "-c", str(path)], capture_output=True, text=True).stdout


def main() -> None:
    out, logs = Path(sys.argv[1]), Path(sys.argv[2])
    half = torch.empty(1, device="meta", dtype=torch.bfloat16)
    full = torch.empty(1, device="meta")
    for name, first in (("gemm_bf16_zeros", False), ("gemm_bf16_first", True)):
        printed = io.StringIO()
        with knobs.nvidia.scope(), redirect_stdout(printed):
            knobs.nvidia.dump_ptxas_log = True
            k = gemm.run(
                half,
                half,
                full,
                4096,
                4096,
                4096,
                grid=(1,),
                warmup=True,
                BM=128,
                BN=128,
                BK=64,
                FIRST=first,
                num_warps=8,
                num_stages=3,
            )
        (out / f"{name}.sass.gz").write_bytes(gzip.compress(sass(k).encode(), mtime=0))
        if not first:
            (logs / "ptxas_c7515.log").write_text(printed.getvalue())
    for name, by_bits in (("gemm_bf16x3_split_in_loop", False), ("gemm_bf16x3_split_int_in_loop", True)):
        k = gemm_split.run(
            full,
            full,
            full,
            4096,
            4096,
            4096,
            grid=(1,),
            warmup=True,
            BM=128,
            BN=128,
            BK=32,
            BY_BITS=by_bits,
            num_warps=8,
            num_stages=3,
        )
        (out / f"{name}.sass.gz").write_bytes(gzip.compress(sass(k).encode(), mtime=0))


main()
