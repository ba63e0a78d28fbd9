"""The timing loop's warm-up, call count and kept outputs, on the host clock (no GPU needed)."""

from __future__ import annotations

import time

import pytest
import torch

from adaexplore.executor._modes import Mode, mode_spec
from adaexplore.executor.worker._timing import Timer, call_scale


def sleeper(ms: float, seen: list[float]):
    def call(args: list[torch.Tensor]) -> torch.Tensor:
        seen.append(float(args[0][0]))
        time.sleep(ms / 1e3)
        return args[0] * 2

    return call


def test_strict_warm_up_runs_for_its_time_before_the_timed_calls() -> None:
    spec = mode_spec(Mode.strict).timing
    assert spec.warmup_ms >= 50 and spec.warmup_calls >= 1
    seen: list[float] = []
    started = time.perf_counter()
    measured = Timer(torch.device("cpu")).measure(
        sleeper(2.0, seen), [torch.ones(4)], spec, budget_ms=40, min_reps=5, max_reps=1000
    )
    elapsed_ms = (time.perf_counter() - started) * 1e3
    # 2 ms calls: the warm-up alone needs about warmup_ms / 2 of them, far more than warmup_calls
    assert measured.warmup_n >= spec.warmup_ms / 2.0 * 0.8
    assert measured.warmup_n > spec.warmup_calls
    assert elapsed_ms >= spec.warmup_ms
    # the timed calls follow the budget, estimated from calls made at the end of the warm-up
    assert 5 <= len(measured.times_ms) <= 40 / 2.0 + 1
    assert len(seen) == measured.warmup_n + len(measured.times_ms)
    # every call saw its own input scale
    assert seen == pytest.approx([call_scale(i) for i in range(len(seen))], rel=1e-6)


def test_fixed_protocols_warm_up_by_count_alone() -> None:
    spec = mode_spec(Mode.paper).timing
    assert spec.warmup_ms == 0
    seen: list[float] = []
    measured = Timer(torch.device("cpu")).measure(
        sleeper(0.1, seen), [torch.ones(4)], spec, budget_ms=40, min_reps=5, max_reps=1000
    )
    assert measured.warmup_n == spec.warmup_calls
    assert len(measured.times_ms) == spec.reps
    assert set(seen) == {1.0}  # the paper's protocol reuses one input


def test_outputs_of_chosen_calls_are_kept_with_their_scales() -> None:
    spec = mode_spec(Mode.strict).timing.model_copy(update={"warmup_ms": 0.0})
    measured = Timer(torch.device("cpu")).measure(
        sleeper(0.1, []), [torch.ones(4)], spec, budget_ms=5, min_reps=20, max_reps=20, keep_at=(0.5, 0.9)
    )
    assert len(measured.kept) == 2
    for scale, (out,) in measured.kept:
        assert torch.equal(out, torch.full((4,), 2 * scale))
