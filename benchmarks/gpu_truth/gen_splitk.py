"""Split-K GEMMs for the corpus generator: Level 1 problem 6 (256x256 output, K = 524288), whose four 128x128
output tiles leave an H200 idle unless the reduction is split over programs. Variants: how many splits (grids of
32 to 512 programs), atomics into the output against a partials buffer reduced by a second kernel, and the dot
(tf32x3, or bf16x3 split in registers)."""

from __future__ import annotations

_HEAD = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"


def splitk(
    prec: str, splits: int, atomics: bool, bm: int = 128, bn: int = 128, bk: int = 32, w: int = 8, s: int = 3
) -> str:
    how = "atomics into the zeroed output" if atomics else "a partials buffer summed by a second kernel"
    dot = "bf16x3 split in registers (3 bf16 dots per K step)" if prec == "bf16x3" else f"{prec} dot"
    head = (
        f"# split-K Triton GEMM: each of the 4 output tiles' reduction split over {splits} programs ({4 * splits} in all), "
        f"{dot}, {bm}x{bn}x{bk} w{w} s{s}, the slices combined by {how} "
        f"[family=splitk prec={prec} splits={splits} atomics={int(atomics)} bm={bm} bn={bn} bk={bk} warps={w} stages={s}]"
    )
    if prec == "bf16x3":
        dots = """        a_hi = a.to(tl.bfloat16)
        a_lo = (a - a_hi.to(tl.float32)).to(tl.bfloat16)
        b_hi = b.to(tl.bfloat16)
        b_lo = (b - b_hi.to(tl.float32)).to(tl.bfloat16)
        acc = tl.dot(a_lo, b_hi, acc)
        acc = tl.dot(a_hi, b_lo, acc)
        acc = tl.dot(a_hi, b_hi, acc)"""
    else:
        dots = f'        acc = tl.dot(a, b, acc, input_precision="{prec}")'
    finish = (
        "    tl.atomic_add(out_ptr + off, acc, mask=mask)"
        if atomics
        else "    tl.store(part_ptr + pid_k.to(tl.int64) * M * N + off, acc, mask=mask)"
    )
    reduce_kernel = (
        ""
        if atomics
        else """

@triton.jit
def _reduce_kernel(part_ptr, out_ptr, n_elements, S, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n_elements
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for sl in range(0, S):
        acc += tl.load(part_ptr + sl * n_elements + offs, mask=ok, other=0.0)
    tl.store(out_ptr + offs, acc, mask=ok)
"""
    )
    if atomics:
        host = f"""        out = torch.zeros((M, N), device=A.device, dtype=torch.float32)
        _splitk_kernel[grid](A, B, out, out, M, N, K, k_per, A.stride(0), B.stride(0), BM={bm}, BN={bn}, BK={bk},
                             num_warps={w}, num_stages={s})
        return out"""
    else:
        host = f"""        part = torch.empty((grid[1], M, N), device=A.device, dtype=torch.float32)
        out = torch.empty((M, N), device=A.device, dtype=torch.float32)
        _splitk_kernel[grid](A, B, out, part, M, N, K, k_per, A.stride(0), B.stride(0), BM={bm}, BN={bn}, BK={bk},
                             num_warps={w}, num_stages={s})
        _reduce_kernel[(triton.cdiv(M * N, 1024),)](part, out, M * N, grid[1], BLOCK=1024, num_warps=4)
        return out"""
    return f"""{head}
{_HEAD}

@triton.jit
def _splitk_kernel(a_ptr, b_ptr, out_ptr, part_ptr, M, N, K, K_PER, stride_am, stride_bk,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    pid_k = tl.program_id(1)
    num_pid_n = tl.cdiv(N, BN)
    offs_m = (pid // num_pid_n) * BM + tl.arange(0, BM)
    offs_n = (pid % num_pid_n) * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    k_start = pid_k * K_PER
    k_end = tl.minimum(k_start + K_PER, K)
    a_ptrs = a_ptr + (offs_m % M)[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + (offs_n % N)[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(k_start, k_end, BK):
        k_ok = offs_k < k_end - k0
        a = tl.load(a_ptrs + k0, mask=k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs + k0 * stride_bk, mask=k_ok[:, None], other=0.0)
{dots}
    mask = (offs_m < M)[:, None] & (offs_n < N)[None, :]
    off = offs_m[:, None] * N + offs_n[None, :]
{finish}
{reduce_kernel}

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        A = A.contiguous()
        B = B.contiguous()
        M, K = A.shape
        N = B.shape[1]
        k_per = triton.cdiv(triton.cdiv(K, {splits}), {bk}) * {bk}
        grid = (triton.cdiv(M, {bm}) * triton.cdiv(N, {bn}), triton.cdiv(K, k_per))
{host}
"""


def kernels() -> list[tuple[str, str]]:
    return [
        ("level1/6/tf32x3_split64_atomics.py", splitk("tf32x3", 64, True)),
        ("level1/6/tf32x3_split128_partials.py", splitk("tf32x3", 128, False)),
        ("level1/6/tf32x3_split8_atomics.py", splitk("tf32x3", 8, True)),
        ("level1/6/bf16x3_split64_atomics.py", splitk("bf16x3", 64, True)),
    ]
