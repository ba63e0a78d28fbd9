"""Small sizes derived for task modules that have none: the candidates read from the text, and the probe that
runs the reference at them in its own process."""

from __future__ import annotations

import ast
import queue
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from adaexplore.executor._size_prober import SizeProber, derive_small_sizes
from adaexplore.executor._small_sizes import BUDGET_S, candidates, module_sizes, with_small_sizes
from adaexplore.executor._task import task_from_source

KERNELBENCH = Path(__file__).resolve().parents[3] / "shared" / "data" / "kernelbench"

GROUPED = textwrap.dedent("""
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self, channels, groups, kernel_size):
            super().__init__()
            self.conv = nn.Conv2d(channels, channels * 2, kernel_size, groups=groups)

        def forward(self, x):
            return self.conv(x)

    batch_size = 64
    channels = 96
    groups = 12
    kernel_size = 5
    height, width = 300, 200
    wide = 2 * width

    def get_inputs():
        return [torch.rand(batch_size, channels, height, width)]

    def get_init_inputs():
        return [channels, groups, kernel_size]
""")


def test_candidates_keep_structure_and_divisibility() -> None:
    found, reason = candidates(GROUPED)
    assert reason is None
    first = found[0].sizes
    assert first["batch_size"] == 2
    assert first["channels"] % 12 == 0 and first["channels"] <= 17  # still divisible by its groups
    assert "groups" not in first and "kernel_size" not in first  # structural numbers stay
    assert (first["height"], first["width"]) == (17, 17)
    assert first["wide"] == 2 * first["width"]  # a derived name follows the one it is computed from
    # smallest first, a ragged size before the power of two; the last lowers only the batch
    assert [c.sizes.get("height") for c in found] == [17, 16, 33, 32, 65, 64, 129, 128, 257, 256, None]
    assert found[-1].sizes == {"batch_size": 2}
    assert module_sizes(GROUPED)[0]["height"] == 300


def test_a_derived_assignment_is_read_back_and_overrides_an_earlier_one() -> None:
    source = with_small_sizes(GROUPED + "\nSMALL_SIZES = {'batch_size': 3}\n", {"batch_size": 2}, "a test")
    assert task_from_source(source).small_sizes == {"batch_size": 2}
    assert ast.parse(source)  # still a module


def test_the_probe_derives_sizes_under_which_the_reference_runs() -> None:
    derivation = derive_small_sizes(GROUPED, timeout_s=60)
    assert derivation.sizes is not None, derivation.reason
    assert derivation.sizes["channels"] % 12 == 0
    chosen = derivation.chosen
    assert chosen is not None and chosen.forward_s is not None and chosen.forward_s < BUDGET_S
    assert "SMALL_SIZES derived" in derivation.note() and "channels=" in derivation.note()


def test_a_kernel_larger_than_the_smallest_input_moves_to_a_larger_candidate() -> None:
    source = GROUPED.replace("kernel_size = 5", "kernel_size = 21")
    derivation = derive_small_sizes(source, timeout_s=60)
    assert derivation.sizes is not None, derivation.reason
    assert min(derivation.sizes["height"], derivation.sizes["width"]) >= 21
    refused = derivation.attempts[0]
    assert not refused.ok and "Kernel size" in (refused.reason or "")


def test_a_reference_that_hangs_is_stopped_and_named() -> None:
    source = GROUPED.replace("return self.conv(x)", "import time; time.sleep(60); return self.conv(x)")
    began = time.monotonic()
    derivation = derive_small_sizes(source, timeout_s=3)
    assert time.monotonic() - began < 30
    assert derivation.sizes is None
    assert "longer than 3 s" in (derivation.reason or "")
    assert "no small sizes derived" in derivation.note()


def test_a_reference_that_fails_at_every_size_says_why() -> None:
    source = GROUPED.replace("return self.conv(x)", "raise ValueError('broken on purpose')")
    derivation = derive_small_sizes(source, timeout_s=60)
    assert derivation.sizes is None
    assert "fails at every candidate" in (derivation.reason or "") and "broken on purpose" in (derivation.reason or "")


@pytest.mark.slow
@pytest.mark.skipif(not KERNELBENCH.is_dir(), reason="the KernelBench problems (shared/data/kernelbench) are absent")
def test_every_kernelbench_problem_gets_small_sizes_or_a_reason() -> None:
    files = sorted(p for level in ("level1", "level2", "level3") for p in (KERNELBENCH / level).glob("*.py"))
    assert len(files) > 200
    probers: queue.Queue[SizeProber] = queue.Queue()
    for _ in range(2):  # CI has two cores: one single-threaded probe on each
        probers.put(SizeProber(threads=1))

    def derive(path: Path) -> tuple[Path, object, float]:
        prober = probers.get()
        try:
            began = time.monotonic()
            derivation = prober.derive(path.read_text(), timeout_s=15)
            return path, derivation, time.monotonic() - began
        finally:
            probers.put(prober)

    try:
        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(derive, files))
    finally:
        while not probers.empty():
            probers.get().close()
    failures = []
    for path, derivation, _ in results:
        name = f"{path.parent.name}/{path.name}"
        if derivation.sizes is None:
            assert derivation.reason, f"{name}: no sizes and no reason"
            failures.append(f"{name}: {derivation.reason}")
        else:
            assert derivation.chosen is not None and derivation.chosen.forward_s < BUDGET_S, name
    total = sum(seconds for *_, seconds in results)
    print(f"\n{len(results) - len(failures)}/{len(results)} got sizes; {total / len(results):.2f} s per problem")
    print("\n".join(failures))
    assert len(failures) <= len(results) // 20, "\n".join(failures)
