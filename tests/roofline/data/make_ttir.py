"""Writes the Triton IR of a few small kernels for tests/roofline (compile-only, sm_90), without its source
locations, and the TritonGPU IR of two GEMMs whose right-hand operand lies along N and along K:
python tests/roofline/data/make_ttir.py tests/roofline/data"""

import re
import sys

import torch
import triton
import triton.language as tl

from adaexplore.executor.worker.candidate._compile_only import activate_compile_only

activate_compile_only()


@triton.jit
def gemm(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    PRECISION: tl.constexpr,
    B_ALONG_K: tl.constexpr = False,
):
    # B_ALONG_K: x @ w.T with w stored N x K, so that the dot's K x N operand is contiguous along K
    pid = tl.program_id(0)
    n_tiles = tl.cdiv(N, BN)
    pm, pn = pid // n_tiles, pid % n_tiles
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        if B_ALONG_K:
            b = tl.load(b_ptr + rn[None, :] * K + (k + rk)[:, None])
        else:
            b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


@triton.jit
def gemm_split(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, BF16: tl.constexpr):
    # fp32 tiles split into 16-bit high and low parts in registers, three products into an fp32 accumulator
    pid = tl.program_id(0)
    n_tiles = tl.cdiv(N, BN)
    pm, pn = pid // n_tiles, pid % n_tiles
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        if BF16:
            a_hi, b_hi = a.to(tl.bfloat16), b.to(tl.bfloat16)
            a_lo, b_lo = (a - a_hi.to(tl.float32)).to(tl.bfloat16), (b - b_hi.to(tl.float32)).to(tl.bfloat16)
        else:
            a_hi, b_hi = a.to(tl.float16), b.to(tl.float16)
            a_lo, b_lo = (a - a_hi.to(tl.float32)).to(tl.float16), (b - b_hi.to(tl.float32)).to(tl.float16)
        acc = tl.dot(a_lo, b_hi, acc)
        acc = tl.dot(a_hi, b_lo, acc)
        acc = tl.dot(a_hi, b_hi, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


@triton.jit
def persistent_sum(x_ptr, out_ptr, n_rows, n_cols, NUM_PROGRAMS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    for row in range(pid, n_rows, NUM_PROGRAMS):
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for col in range(0, n_cols, BLOCK):
            offs = col + tl.arange(0, BLOCK)
            acc += tl.exp(tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=0.0))
        tl.store(out_ptr + row, tl.sum(acc))


def write(path, ir):
    kept = [
        re.sub(r"\s+loc\((?:[^()]|\([^()]*\))*\)", "", line) for line in ir.splitlines() if not line.startswith("#loc")
    ]
    open(path, "w").write("\n".join(kept) + "\n")


x = torch.empty(1, device="meta")
out = sys.argv[1]
for precision in ("ieee", "tf32x3"):
    k = gemm.run(x, x, x, 256, 256, 1024, grid=(1,), warmup=True, BM=64, BN=64, BK=32, PRECISION=precision, num_warps=4)
    write(f"{out}/gemm_{precision}.ttir", k.asm["ttir"])
# fp16 operands straight from fp16 tensors, the dot asked for tf32 (an fp32-only option the IR may still carry)
h = torch.empty(1, device="meta", dtype=torch.float16)
k = gemm.run(h, h, x, 256, 256, 1024, grid=(1,), warmup=True, BM=64, BN=64, BK=32, PRECISION="tf32", num_warps=4)
write(f"{out}/gemm_fp16.ttir", k.asm["ttir"])
for half, bf16 in (("bf16", True), ("fp16", False)):
    k = gemm_split.run(x, x, x, 256, 256, 1024, grid=(1,), warmup=True, BM=64, BN=64, BK=32, BF16=bf16, num_warps=4)
    write(f"{out}/gemm_{half}x3.ttir", k.asm["ttir"])
# the TritonGPU IR (layouts) of a * b with b along N, and of x @ w.T (along K)
for name, along_k in (("gemm_tf32x3", False), ("gemm_wt_ieee", True)):
    precision = name.rsplit("_", 1)[1]
    sizes = {"BM": 64, "BN": 64, "BK": 32, "PRECISION": precision, "B_ALONG_K": along_k, "num_warps": 4}
    k = gemm.run(x, x, x, 256, 256, 1024, grid=(1,), warmup=True, **sizes)
    write(f"{out}/{name}.ttgir", k.asm["ttgir"])
k = persistent_sum.run(x, x, 1000, 4096, grid=(1,), warmup=True, NUM_PROGRAMS=132, BLOCK=1024, num_warps=4)
write(f"{out}/persistent_sum.ttir", k.asm["ttir"])
