"""No KernelBench problem derives small sizes under which its task is degenerate unless the task is degenerate at
full size too, and those that are get named: the size probe on the problems that used to derive degenerate sizes
(GroupNorms capped to groups of one channel), on those degenerate at full size, and on a sample of others; a kernel
that writes zeros is not `ok` on Level 2 problem 62 with default settings; create_task names a degenerate one. The
whole scan is `benchmarks/degenerate_scan.py`."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from adaexplore import tools  # noqa: E402
from adaexplore.config import Settings  # noqa: E402
from adaexplore.executor import SizeProber, Status  # noqa: E402
from tests.conftest import ON_GPU, fast_settings  # noqa: E402

KERNELBENCH = ROOT.parent / "shared" / "data" / "kernelbench"
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not KERNELBENCH.is_dir(), reason="the KernelBench problems (shared/data/kernelbench) are gone"),
    pytest.mark.skipif(ON_GPU, reason="on a GPU the checks run at full size: no small sizes are derived"),
]

# degenerate at their full sizes (benchmarks/degenerate_scan.py): every size the probe tries makes them degenerate
DEGENERATE = {"level2": [9, 23, 36, 80, 83]}
# capped as written they gave GroupNorms of one channel a group (or its minimum, blind to the inputs)
USED_TO_BE = {"level2": [30, 37, 62, 75, 88, 94]}
SAMPLE = {"level1": [19, 23, 47, 95], "level2": [12, 19, 99]}


def _problem(level: str, number: int) -> Path:
    return next((KERNELBENCH / level).glob(f"{number}_*.py"))


def _all(groups: dict[str, list[int]]) -> list[Path]:
    return [_problem(level, n) for level, numbers in groups.items() for n in numbers]


async def test_derived_sizes_keep_the_task_and_a_degenerate_one_is_named(tmp_path: Path) -> None:
    kept, named = [], []
    async with SizeProber(fast_settings(tmp_path / "home"), threads=1) as prober:
        for path in _all(USED_TO_BE) + _all(SAMPLE):
            derivation = await prober.derive(path.read_text(), timeout_s=120)
            chosen = derivation.chosen
            assert derivation.sizes, f"{path.name}: {derivation.note()}"
            said = f"{path.name}: {derivation.note()}"
            assert derivation.degenerate is None and chosen is not None and chosen.ok, said
            kept.append(path.name)
            if path.name.startswith("62_"):  # its 16 channels a group, as at full size, in two groups or more
                assert derivation.sizes["hidden_size"] == 16 * derivation.sizes["num_groups"] >= 32
        for path in _all(DEGENERATE):
            derivation = await prober.derive(path.read_text(), timeout_s=120)
            found = derivation.degenerate
            assert found is not None, f"{path.name}: {derivation.note()}"
            assert found.line() in derivation.note()
            named.append(path.name)
    assert len(kept) == 13 and len(named) == 5


ZEROS = textwrap.dedent("""
    import torch
    import torch.nn as nn
    import triton
    import triton.language as tl


    @triton.jit
    def _zeros(out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offsets, tl.zeros([BLOCK], dtype=tl.float32), mask=offsets < n)


    class ModelNew(nn.Module):
        def __init__(self, input_size, hidden_size, num_groups, eps=1e-5, negative_slope=0.01):
            super().__init__()
            self.fc = nn.Linear(input_size, hidden_size)
            self.hidden_size = hidden_size

        def forward(self, x):
            out = torch.empty(x.shape[0], self.hidden_size, device=x.device, dtype=x.dtype)
            _zeros[(triton.cdiv(out.numel(), 1024),)](out, out.numel(), BLOCK=1024)
            return out
""")


async def test_a_kernel_that_writes_zeros_is_not_ok_on_level2_problem_62(tmp_path: Path) -> None:
    kernel = tmp_path / "zeros.py"
    kernel.write_text(ZEROS)
    settings = fast_settings(tmp_path / "home")
    evaluation, sizes = await tools.profile_kernel(settings, _problem("level2", 62), kernel)
    assert evaluation.status is Status.mismatch, evaluation.message
    assert sizes is not None and "num_groups=" in sizes  # the derived sizes, which keep each group's 16 channels
    assert not any(f.code.startswith("degenerate") for f in evaluation.audit.flags)


async def test_create_task_names_a_problem_degenerate_at_full_size(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home")
    async with tools.open_services(tools.single_use(settings)) as svc:
        created = await tools.create_checked_task(svc, tools.CreateTaskRequest(path=str(_problem("level2", 23))))
    assert created.degenerate is not None
    assert created.degenerate.endswith("any kernel that writes 0 is correct on this task: its speedups say nothing")
