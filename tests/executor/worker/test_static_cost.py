"""The compile backend's static cost: every kernel compiled for sm_90 at the small and the full sizes, per autotune
config, with registers, spills, shared memory and ptxas warnings; configs that cannot compile are skipped."""

from __future__ import annotations

import pytest

from adaexplore.executor import EvaluationOptions, Evaluator, Status, task_from_source
from adaexplore.executor.pipeline._render import render_evaluation
from adaexplore.executor.worker.cost._static_cost import parse_ptxas_log, plain_warning

pytestmark = pytest.mark.anyio

# A matmul task whose full sizes would take 1 GiB per operand if they were allocated.
MATMUL_TASK = task_from_source(
    """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return a @ b


M = 16384
K = 16384
N = 16384
SMALL_SIZES = {"M": 40, "K": 64, "N": 48}


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
""",
    name="static_cost_matmul",
)

AUTOTUNED = """
import torch
import torch.nn as nn
import triton
import triton.language as tl

CONFIGS = [
    triton.Config({"BM": 32, "BN": 32, "BK": 32}, num_warps=4, num_stages=2),
    # tf32 tiles 128x256x64 in 3 stages need 294,912 B of shared memory: more than an H200 has
    triton.Config({"BM": 128, "BN": 256, "BK": 64}, num_warps=8, num_stages=3),
    CONFIGS_EXTRA
]


@triton.autotune(configs=CONFIGS, key=["M", "N", "K"])
@triton.jit
def matmul_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    tl.static_assert(BK % 16 == 0, "BK must be a multiple of 16")
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + rk
        x = tl.load(a + rm[:, None] * K + k[None, :], mask=(rm[:, None] < M) & (k[None, :] < K), other=0.0)
        y = tl.load(b + k[:, None] * N + rn[None, :], mask=(k[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(x, y)
    tl.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def forward(self, a, b):
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty((M, N), dtype=a.dtype, device=a.device)
        grid = lambda meta: (triton.cdiv(M, meta["BM"]), triton.cdiv(N, meta["BN"]))
        matmul_kernel[grid](a, b, c, M, N, K)
        return c
"""


def autotuned(extra: str) -> str:
    return AUTOTUNED.replace("CONFIGS_EXTRA", extra)


async def test_an_oversized_or_broken_autotune_config_is_skipped_and_the_rest_are_costed(
    evaluator: Evaluator,
) -> None:
    # BK=8 fails the kernel's static_assert: that config does not compile at all
    code = autotuned('triton.Config({"BM": 32, "BN": 32, "BK": 8}, num_warps=4, num_stages=2),')
    result = await evaluator.evaluate(MATMUL_TASK, code, EvaluationOptions(backend="compile"))
    assert result.status is Status.ok, result.message
    costs = result.audit.static_cost
    assert {c.sizes for c in costs} == {"small", "full"}
    for sizes in ("small", "full"):
        at = [c for c in costs if c.sizes == sizes]
        assert len(at) == 3, [c.model_dump() for c in at]
        good = [c for c in at if c.skipped is None]
        assert len(good) == 1 and "BM=32" in good[0].config and "num_warps=4" in good[0].config
        assert good[0].registers is not None and good[0].registers > 0
        assert good[0].shared_memory is not None and 0 < good[0].shared_memory <= 232448
        assert good[0].spill_stores >= 0 and good[0].spill_loads >= 0
        reasons = sorted(c.skipped or "" for c in at if c.skipped is not None)
        assert reasons[0].startswith("does not compile:"), reasons
        assert "shared memory" in reasons[1] and "294912" in reasons[1], reasons
        assert all(c.autotuned for c in at)
    # only the config that fits counts as the kernel's shared memory
    assert result.audit.shared_memory["matmul_kernel"] == good[0].shared_memory
    assert "2 autotune configs skipped" in result.message
    assert "matmul_kernel at full sizes" in result.message and "registers" in result.message
    text = render_evaluation(result)
    assert "sm_90 static cost" in text and "skipped: needs 294912 B of shared memory" in text


async def test_a_kernel_whose_every_config_fails_is_a_compile_error(evaluator: Evaluator) -> None:
    code = autotuned("").replace(
        'triton.Config({"BM": 32, "BN": 32, "BK": 32}, num_warps=4, num_stages=2),',
        'triton.Config({"BM": 32, "BN": 32, "BK": 8}, num_warps=4, num_stages=2),',
    )
    result = await evaluator.evaluate(MATMUL_TASK, code, EvaluationOptions(backend="compile"))
    assert result.status is Status.compile_error, result.message
    assert all(c.skipped is not None for c in result.audit.static_cost)
    assert len(result.audit.static_cost) == 2


async def test_every_config_over_the_shared_memory_limit_is_a_compile_error(evaluator: Evaluator) -> None:
    code = autotuned("").replace(
        'triton.Config({"BM": 32, "BN": 32, "BK": 32}, num_warps=4, num_stages=2),',
        'triton.Config({"BM": 256, "BN": 128, "BK": 64}, num_warps=8, num_stages=3),',
    )
    result = await evaluator.evaluate(MATMUL_TASK, code, EvaluationOptions(backend="compile"))
    assert result.status is Status.compile_error, result.message
    assert "shared memory" in result.message and "matmul_kernel" in result.message


# A kernel whose host code takes a branch only at the full sizes: a constexpr the small sizes never set.
BRANCHY_TASK = task_from_source(
    """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2.0


n = 1 << 28
SMALL_SIZES = {"n": 1000}


def get_inputs():
    return [torch.randn(n)]


def get_init_inputs():
    return []
""",
    name="static_cost_branch",
)

BRANCHY = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def double_kernel(x, y, n, BLOCK: tl.constexpr, WIDE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if WIDE:
        WIDE_BODY
    else:
        tl.store(y + offs, tl.load(x + offs, mask=offs < n) * 2.0, mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        n = x.numel()
        y = torch.empty_like(x)
        wide = n > 1_000_000
        double_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024, WIDE=wide)
        return y
"""


async def test_a_branch_taken_only_at_full_size_is_compiled(evaluator: Evaluator) -> None:
    good = "tl.store(y + offs, tl.load(x + offs, mask=offs < n) * 2.0, mask=offs < n)"
    result = await evaluator.evaluate(
        BRANCHY_TASK, BRANCHY.replace("WIDE_BODY", good), EvaluationOptions(backend="compile")
    )
    assert result.status is Status.ok, result.message
    full = [c for c in result.audit.static_cost if c.sizes == "full"]
    small = [c for c in result.audit.static_cost if c.sizes == "small"]
    assert [c.config for c in full] == ["BLOCK=1024, WIDE=True, num_warps=4, num_stages=3"]
    assert [c.config for c in small] == ["BLOCK=1024, WIDE=False, num_warps=4, num_stages=3"]
    assert "the task's full ones" in result.message

    # tl.dot needs 2-D operands: this branch fails to compile, and only the full sizes reach it
    broken = "tl.store(y + offs, tl.dot(tl.load(x + offs), tl.load(x + offs)))"
    result = await evaluator.evaluate(
        BRANCHY_TASK, BRANCHY.replace("WIDE_BODY", broken), EvaluationOptions(backend="compile")
    )
    assert result.status is Status.compile_error, result.message
    assert "full sizes" in result.message


def test_ptxas_verbose_output_is_read_into_registers_spills_and_plain_warnings() -> None:
    log = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'mm' for 'sm_90a'
ptxas info    : Function properties for mm
    0 bytes stack frame, 48 bytes spill stores, 40 bytes spill loads
ptxas warning : Potential Performance Loss: wgmma.mma_async instructions are serialized due to insufficient \
register resources for the wgmma pipeline in the function 'mm'
ptxas info    : Used 255 registers, used 1 barriers
"""
    report = parse_ptxas_log(log)
    assert (report.registers, report.spill_stores, report.spill_loads) == (255, 48, 40)
    # a performance advisory given as a warning is read once, as an advisory (test_ptxas_advice.py)
    assert report.warnings == []
    [advice] = report.advisories
    assert advice.serializes and advice.function == "mm"
    assert "run one after another" in advice.said() and "function 'mm'" not in advice.said()
    assert "insufficient register resources for the wgmma pipeline" in advice.text
    assert plain_warning("Potential Performance Loss: something else").startswith("possible slowdown: ")
