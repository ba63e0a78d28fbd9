"""The CPU path against the GPU's truth: kernels of the shared corpus (`../shared/data/gpu-truth`: kernels assistants
wrote for KernelBench Level 2, each with its H200 verdict in strict mode) are judged here as a search judges them
(`benchmarks/cpu_verdicts.py`: derived small sizes, the compile and interpret backends, an MCP call's budget),
and each verdict must agree with the H200's: correct against not correct.

The whole corpus takes about twenty minutes on two cores, more than the test suite can give it; the suite takes
most kinds it holds instead: each failure the H200 found of a kind the corpus has (hand-chained tf32 products
wrong over the full reduction, a TMA variant), and a kernel of each passing design (Triton's own tf32x3, a
hand-made split checked at the full reduction, a library call with a Triton epilogue, an implicit-GEMM
convolution); two kinds other tests check are left out (below `PART`). `ADAEXPLORE_GPU_TRUTH=all` takes the whole
corpus.

A kernel whose tf32 products were checked at the full reduction length sits near strict mode's fp32 tolerance
on the GPU too: one that failed there by a few elements of 8.4 million passes or fails here by chance, where a
few hundred outputs are compared on inputs drawn afresh, and so does a split whose normwise error lies within
a tenth of the tolerance (`BORDERLINE`: their verdicts may differ, and the suite does not take them). No honest
kernel may run out of its budget. Skipped where the shared data is absent, and on a GPU (which judges at full size
itself)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from adaexplore.config import Settings
from adaexplore.executor import Evaluator
from tests.conftest import ON_GPU, ROOT

sys.path.insert(0, str(ROOT))
from benchmarks.cpu_verdicts import TRUTH, corpus, judge, table

BORDERLINE = {
    # failures on the H200 by a few elements of 8.4 million, with the normwise error under the tolerance: a check
    # of a few hundred outputs meets such a tail by chance
    "level2/76/assistant_pick.py",  # 61 elements
    "level2/76/step2.py",  # 8
    "level2/76/step3.py",  # 28
    "level2/76/step6.py",  # 96
    "level2/76/step10.py",  # 9 (measured again on 2026-12-05: the policy had refused its import)
    # splits over K = 8192 whose normwise error here is 1.8e-5 to 2.5e-5 against the limit of 2e-5
    "level2/12/8.py",  # correct on the H200
    "level2/12/10.py",  # wrong on the H200 by one element
}
PART = [
    "level2/12/3.py",  # hand-chained tf32 products, wrong over K = 8192 (normwise 5.7e-5 on the H200)
    "level2/76/step1.py",  # Triton's own tf32x3
    "level2/76/best.py",  # cuBLAS + a Triton epilogue (cuDNN + one, level2/17/best.py, is the same kind)
    "level2/99/3.py",  # a TMA-fed split, wrong on the H200
    "level2/17/step3.py",  # an implicit-GEMM convolution on split operands (checked over in_channels = 64)
    "level2/46/step9.py",  # a fused convolution in tf32x3
]
# Kinds the suite checks elsewhere, for its time: shared memory over the limit (level2/76/step7.py, compile_error:
# tests/memory/test_starter.py's reproducer) and TMA descriptors made on the host (level2/17/step9.py, ok on the
# H200: tests/adversarial/test_hopper_code.py). `ADAEXPLORE_GPU_TRUTH=all` takes them with the rest.

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not TRUTH.is_file(), reason=f"the shared corpus of GPU truth is not at {TRUTH.parent}"),
    pytest.mark.skipif(ON_GPU, reason="the CPU path's agreement with the GPU is checked on a machine without one"),
]


async def test_the_cpu_verdicts_agree_with_the_h200s(evaluator: Evaluator, home: Path) -> None:
    whole = os.environ.get("ADAEXPLORE_GPU_TRUTH") == "all"
    rows = corpus(None if whole else PART)
    assert whole or {r["kernel"] for r in rows} == set(PART)
    outcomes = await judge(evaluator, rows, Settings(home=home), budget_s=40.0)
    report = table(outcomes)
    out_of_time = [o for o in outcomes if o.cpu in ("timeout", "infra_error")]
    assert not out_of_time, report
    disagree = [o for o in outcomes if not o.agrees]
    assert all(o.kernel in BORDERLINE and o.checked for o in disagree), report
