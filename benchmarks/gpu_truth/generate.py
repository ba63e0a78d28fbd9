"""Write the corpus's generated kernels: families of variants of a few well-written templates, each file's first
line saying its design and, in brackets, its parameters (`[family=gemm prec=bf16x3 ... stages=3 ...]`).

    python benchmarks/gpu_truth/generate.py          # (re)write every generated kernel
    python benchmarks/gpu_truth/generate.py --check  # exit 1 where a file differs from what the templates write

The families differ in what an expert sees in compiled code: tile shapes, warps, pipeline stages, grouped or plain
program order, an accumulator started from the first product or from zeros (or a split's small products in an
accumulator of their own), conversions in the main loop (a split inside or outside it), shared memory that fits
one or two CTAs per SM, persistent grids sized right or too small, TMA or pointer loads, autotuning. Hand-written
kernels (the designs a template cannot express) live beside them; this script never touches a file it does not
write.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import gen_chains
import gen_conv
import gen_l3_attn
import gen_l3_conv
import gen_l3_mlp
import gen_rows
import gen_splitk
from gen_gemm import Gemm, GemmProblem, render
from gen_lib import render_lib
from gen_problems import L1_2, L1_8, L1_17, P12, P53, P59, P63, P68, P70, P76, P81, P95

HERE = Path(__file__).resolve().parent


def _t(prec: str, tiles: str, **kw: object) -> Gemm:
    """A variant named from its precision and tiles: `_t("bf16x3", "128x128x64 w8 s3", acc="first")`."""
    shape, w, s = tiles.split()
    bm, bn, bk = (int(x) for x in shape.split("x"))
    return Gemm(name="", prec=prec, bm=bm, bn=bn, bk=bk, warps=int(w[1:]), stages=int(s[1:]), **kw)  # type: ignore[arg-type]


def _named(v: Gemm) -> Gemm:
    from dataclasses import replace

    if v.name:
        return v
    split = ""
    if v.split:
        split = v.split_a if v.split_a == v.split_b else f"x{v.split_a}_w{v.split_b}"
    parts = [("tma_" if v.tma else "") + v.prec + split]
    if v.persistent:
        parts.append(f"persist{v.persistent}")
    if v.autotune:
        parts.append(f"autotuned{len(v.autotune)}")
    else:
        parts.append(f"{v.bm}x{v.bn}x{v.bk}_w{v.warps}_s{v.stages}")
    if v.group == 1:
        parts.append("plain")
    if v.acc == "first":
        parts.append("first")
    if v.acc == "two":
        parts.append("twoacc")
    return replace(v, name="_".join(parts))


AUTOTUNE4 = ((128, 128, 32, 8, 3), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (128, 256, 32, 8, 3))
AUTOTUNE8 = (*AUTOTUNE4, (128, 128, 64, 8, 3), (64, 64, 64, 4, 3), (128, 128, 32, 4, 4), (256, 128, 32, 8, 3))
BF = "bf16x3"


def gemm_families() -> list[tuple[GemmProblem, Gemm]]:
    fams: list[tuple[GemmProblem, list[Gemm]]] = [
        # bf16x3 split before the GEMM: pipeline depth, warps, tiles, program order, 1 vs 2 CTAs per SM, and the
        # accumulator started from the first product (the wgmma serialization case); level2/12/bf16x3_presplit.py
        # is this family's 128x128x64 w8 s3 member
        (
            P12,
            [
                _t(BF, "128x128x64 w8 s3", acc="first", note="bf16x3_presplit.py with the first K step peeled"),
                _t(BF, "128x128x64 w8 s2"),
                _t(BF, "128x128x32 w8 s4"),
                _t(BF, "128x128x32 w8 s3", note="96 KB of shared memory: two CTAs fit an SM"),
                _t(BF, "128x128x32 w8 s3", acc="first"),
                _t(BF, "128x128x64 w4 s3"),
                _t(BF, "128x128x64 w8 s3", group=1),
                _t(BF, "64x128x64 w4 s3"),
                _t(BF, "128x64x64 w4 s4"),
                _t(BF, "64x64x64 w4 s3"),
                _t(BF, "128x256x32 w8 s3"),
                _t(BF, "256x128x32 w8 s3"),
                _t("fp16x3", "128x128x32 w8 s3"),
                _t("fp16x3", "128x128x64 w8 s3", acc="first"),
                _t(BF, "128x128x64 w8 s3", acc="two"),
            ],
        ),
        # the split inside the main loop (conversions per K step) against outside it
        (
            P63,
            [
                _t(BF, "128x128x32 w8 s3", split_a="loop", split_b="loop"),
                _t(BF, "128x128x32 w8 s3", split_a="loopint", split_b="loopint"),
                _t(BF, "128x128x32 w8 s3", split_a="loop", split_b="pre"),
                _t(BF, "128x128x32 w8 s3"),
                _t(BF, "128x128x64 w8 s3", split_a="loop", split_b="loop"),
                _t(BF, "128x128x32 w8 s2", split_a="loop", split_b="loop"),
                _t(BF, "128x128x32 w8 s4", split_a="loop", split_b="loop"),
                _t(BF, "128x128x32 w4 s3", split_a="loop", split_b="loop"),
                _t(BF, "128x128x32 w8 s3", split_a="loop", split_b="loop", acc="first"),
                _t(BF, "128x128x32 w8 s3", split_a="loopint", split_b="loopint", acc="first"),
                _t("tf32x3", "128x128x32 w8 s3"),
            ],
        ),
        # tf32x3 (and ieee) dots on fp32 tiles
        (
            P70,
            [
                _t("tf32x3", "128x128x32 w8 s3"),
                _t("tf32x3", "128x128x32 w8 s2"),
                _t("tf32x3", "128x128x32 w8 s4"),
                _t("tf32x3", "128x128x32 w4 s3"),
                _t("tf32x3", "64x128x32 w4 s3"),
                _t("tf32x3", "128x64x32 w4 s3"),
                _t("tf32x3", "128x256x32 w8 s3"),
                _t("tf32x3", "128x128x32 w8 s3", group=1),
                _t("tf32x3", "128x128x32 w8 s3", acc="first"),
                _t("tf32x3", "64x64x32 w4 s4"),
                _t("tf32x3", "128x128x64 w8 s2"),
                _t("ieee", "64x64x32 w4 s3"),
                _t("ieee", "128x128x32 w8 s2"),
            ],
        ),
        # persistent grids: sized to the SMs, half of them, twice (two CTAs resident), and 12 programs
        (
            P76,
            [
                _t(BF, "128x128x64 w8 s3", persistent="sms"),
                _t(BF, "128x128x64 w8 s3", persistent="half"),
                _t(BF, "128x128x64 w8 s3", persistent="12", note="too small on purpose: 12 of the SMs busy"),
                _t(BF, "128x128x64 w8 s3", persistent="sms", group=1),
                _t(BF, "128x128x64 w8 s3", persistent="sms", acc="first"),
                _t(BF, "128x128x32 w8 s3", persistent="sms"),
                _t(BF, "128x128x32 w8 s3", persistent="2sms", note="96 KB of shared memory: two CTAs per SM"),
                _t("tf32x3", "128x128x32 w8 s3", persistent="sms"),
                _t("tf32x3", "128x128x32 w8 s3", persistent="12", note="too small on purpose: 12 of the SMs busy"),
            ],
        ),
        # TMA descriptor loads against pointer loads
        (
            P53,
            [
                _t(BF, "128x128x64 w8 s3", tma=True),
                _t(BF, "128x128x32 w8 s4", tma=True),
                _t(BF, "128x256x32 w8 s3", tma=True),
                _t(BF, "128x128x64 w8 s3", tma=True, acc="first"),
                _t(BF, "128x128x64 w8 s3", tma=True, persistent="sms"),
                _t(BF, "128x128x64 w8 s3", tma=True, persistent="12", note="too small on purpose: 12 of the SMs busy"),
                _t(BF, "128x128x64 w8 s3"),
                _t("tf32x3", "128x128x32 w8 s3", tma=True),
                _t("tf32x3", "128x128x32 w8 s4", tma=True),
            ],
        ),
        # autotuned against one fixed config
        (
            P81,
            [
                _t("tf32x3", "128x128x32 w8 s3", autotune=AUTOTUNE4),
                _t(BF, "128x128x32 w8 s3", autotune=AUTOTUNE4),
                _t(BF, "128x128x32 w8 s3", autotune=AUTOTUNE8),
                _t(BF, "128x128x64 w8 s3"),
            ],
        ),
        # M = 128 and a 4 GiB weight: a split pass over the weight costs more than the GEMM saves
        (
            P59,
            [
                _t("tf32x3", "64x128x32 w4 s4"),
                _t("tf32x3", "128x128x32 w8 s3"),
                _t(BF, "64x128x32 w4 s3", split_a="loop", split_b="loop"),
                _t(BF, "128x128x64 w8 s3", note="splits the 4 GiB weight at every call"),
                _t(BF, "64x128x32 w4 s3", split_a="pre", split_b="loop"),
            ],
        ),
        (
            L1_2,
            [
                _t("tf32x3", "128x128x32 w8 s3"),
                _t("tf32x3", "128x256x32 w8 s3"),
                _t(BF, "128x128x64 w8 s3"),
                _t(BF, "128x128x32 w8 s4"),
                _t("fp16x3", "128x128x64 w8 s3"),
                _t(BF, "128x128x64 w8 s3", tma=True, persistent="sms"),
                _t(BF, "128x128x64 w8 s3", acc="two", note="positive operands: small products kept apart"),
            ],
        ),
        (
            L1_8,
            [
                _t("tf32x3", "128x128x32 w8 s3"),
                _t(BF, "128x128x64 w8 s3"),
                _t(BF, "128x128x32 w8 s3", split_a="loop", split_b="loop"),
                _t("ieee", "64x64x32 w4 s3"),
                _t(BF, "128x128x64 w8 s3", acc="two", note="positive operands: small products kept apart"),
            ],
        ),
        # A @ B^T: the linear layout without bias, TMA and persistent against pointer loads, split in or out of the loop
        (
            L1_17,
            [
                _t("tf32x3", "128x128x32 w8 s3"),
                _t("tf32x3", "128x128x32 w8 s3", tma=True),
                _t("tf32x3", "128x256x32 w8 s3"),
                _t(BF, "128x128x64 w8 s3"),
                _t(BF, "128x128x64 w8 s3", tma=True),
                _t(BF, "128x128x64 w8 s3", tma=True, persistent="sms"),
                _t(BF, "128x128x32 w8 s3", split_a="loop", split_b="loop"),
                _t("ieee", "128x128x32 w8 s2"),
                _t("fp16x3", "128x128x64 w8 s3", acc="first"),
                _t(BF, "128x128x64 w8 s3", acc="two", note="positive operands: small products kept apart"),
                _t(BF, "128x128x32 w8 s3", split_a="loop", split_b="loop", acc="two"),
                _t(BF, "128x128x64 w8 s3", tma=True, persistent="sms", acc="two"),
            ],
        ),
        # M = 128, a 1 GiB weight: how many tiles the grid has (128 of 128x128, under one wave of 132 SMs, to 512 of
        # 64x64), and the weight split in the loop, in a pass, or not at all
        (
            P68,
            [
                _t("tf32x3", "64x128x32 w4 s4"),
                _t("tf32x3", "128x128x32 w8 s3", note="128 tiles: one wave leaves 4 SMs idle"),
                _t("tf32x3", "64x64x32 w4 s4"),
                _t("tf32x3", "128x64x32 w4 s4"),
                _t(BF, "64x128x32 w4 s3", split_a="loop", split_b="loop"),
                _t(BF, "64x128x32 w4 s3", split_a="pre", split_b="loop"),
                _t(BF, "128x128x64 w8 s3", note="splits the 1 GiB weight at every call"),
                _t("ieee", "64x128x32 w4 s3"),
            ],
        ),
        # a long transcendental epilogue on a 1024x8192x8192 GEMM
        (
            P95,
            [
                _t(BF, "128x128x64 w8 s3"),
                _t(BF, "128x128x64 w8 s3", acc="first"),
                _t(BF, "128x128x32 w8 s4"),
                _t(BF, "128x128x32 w8 s3", split_a="loop", split_b="loop"),
                _t(BF, "128x128x32 w8 s3", split_a="loopint", split_b="loopint"),
                _t(BF, "128x128x64 w8 s3", tma=True),
                _t("tf32x3", "128x128x32 w8 s3"),
                _t("tf32x3", "128x128x32 w8 s3", persistent="sms"),
                _t("tf32x3", "128x128x32 w8 s3", autotune=AUTOTUNE4),
            ],
        ),
    ]
    return [(p, _named(v)) for p, vs in fams for v in vs]


def everything() -> list[tuple[str, str]]:
    """(path under this folder, text) of every generated kernel."""
    out = [(f"level{p.level}/{p.number}/{v.name}.py", render(p, v)) for p, v in gemm_families()]
    for p, fused in ((P63, True), (P70, True), (P59, True), (P81, True), (P81, False), (P68, True)):
        name = "lib_epilogue" if fused else "lib_unfused"
        out.append((f"level{p.level}/{p.number}/{name}.py", render_lib(p, fused)))
    out += gen_chains.kernels()
    out += gen_rows.kernels()
    out += gen_conv.kernels()
    out += gen_l3_mlp.kernels()
    out += gen_l3_attn.kernels()
    out += gen_l3_conv.kernels()
    out += gen_splitk.kernels()
    names = [path for path, _ in out]
    dupes = [n for n, c in Counter(names).items() if c > 1]
    if dupes:
        raise SystemExit(f"two variants share a file name: {dupes}")
    return out


def main(check: bool) -> None:
    stale = []
    for rel, text in everything():
        path = HERE / rel
        if path.is_file() and path.read_text() == text:
            continue
        stale.append(rel)
        if not check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    total = len(everything())
    if check:
        print(f"{len(stale)} of {total} generated kernels differ from the templates" + (f": {stale}" if stale else ""))
        sys.exit(1 if stale else 0)
    print(f"{total} generated kernels; {len(stale)} written")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true")
    main(parser.parse_args().check)
