"""The timing loop's warm-up, call count and kept outputs, on the host clock (no GPU needed)."""

from __future__ import annotations

import statistics
import time

import pytest
import torch

from adaexplore.executor._modes import Mode, mode_spec
from adaexplore.executor.worker._timing import Timer


def sleeper(ms: float, seen: list[float], at: list[float] | None = None):
    def call(args: list[torch.Tensor]) -> torch.Tensor:
        seen.append(float(args[0][0]))
        if at is not None:
            at.append(time.perf_counter())
        time.sleep(ms / 1e3)
        return args[0] * 2

    return call


def test_strict_warm_up_runs_for_its_time_before_the_timed_calls() -> None:
    spec = mode_spec(Mode.strict).timing
    assert spec.warmup_ms >= 50 and spec.warmup_calls >= 1
    seen: list[float] = []
    at: list[float] = []
    measured = Timer(torch.device("cpu")).measure(
        sleeper(2.0, seen, at), [torch.ones(4)], spec, budget_ms=40, min_reps=5, max_reps=1000
    )
    # 2 ms calls: the warm-up goes on for its time, far past warmup_calls, and only then are calls timed
    assert measured.warmup_n > spec.warmup_calls
    # (within 1 ms: the clock starts a little before the first call and is read a little before each)
    assert (at[measured.warmup_n] - at[0]) * 1e3 >= spec.warmup_ms - 1.0
    assert (at[measured.warmup_n - 1] - at[0]) * 1e3 < spec.warmup_ms + 1.0  # and stops once that time is up
    # the timed calls follow the budget, estimated from calls made at the end of the warm-up
    assert 5 <= len(measured.times_ms) <= 40 / 2.0 + 1
    assert len(seen) == measured.warmup_n + len(measured.times_ms)
    # every call saw its own input scale, below 1 (never the base itself) and within 1/16 of it
    assert len(set(seen)) == len(seen)
    assert all(0.9375 <= value < 1.0 for value in seen)


def test_the_scales_of_timed_calls_cannot_be_foreseen() -> None:
    # Two measurements of the same call with the same inputs draw different scales: a candidate that
    # computed outputs ahead for the scales to come would look up the wrong ones.
    spec = mode_spec(Mode.strict).timing.model_copy(update={"warmup_ms": 0.0})
    first: list[float] = []
    second: list[float] = []
    for seen in (first, second):
        Timer(torch.device("cpu")).measure(
            sleeper(0.0, seen), [torch.ones(4)], spec, budget_ms=1, min_reps=20, max_reps=20
        )
    assert len(first) == len(second) >= 20
    assert not set(first) & set(second)


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


# On a GPU: strict timing enqueues calls back to back and probes for work its events cannot see. How close
# it comes to triton.testing.do_bench is a benchmark (benchmarks/evaluator_bench.py --only dobench).

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU: times CUDA work")


def strict_on_gpu(call, base, **kwargs):  # type: ignore[no-untyped-def]
    spec = mode_spec(Mode.strict).timing
    assert spec.pipelined
    with torch.no_grad():
        return Timer(torch.device("cuda")).measure(
            call, base, spec, budget_ms=200, min_reps=30, max_reps=2000, **kwargs
        )


@pytest.mark.gpu
@needs_gpu
def test_strict_gpu_timing_adds_work_left_on_another_stream() -> None:
    import triton

    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.randn(2048, 2048, device="cuda")
    side = torch.cuda.Stream()
    kept: list[torch.Tensor] = []

    def hidden(args: list[torch.Tensor]) -> torch.Tensor:
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            kept.append(args[0] @ args[0])  # never joined to the current stream
        del kept[:-2]
        return args[0][:1].clone()

    measured = strict_on_gpu(hidden, [a])
    matmul = triton.testing.do_bench(lambda: a @ a, warmup=50, rep=300, return_mode="median")
    # The current stream's own work is a one-row copy; what the probes add is the part of the side
    # stream's matmul still running after that copy is done (on an H200, about half of it).
    assert statistics.median(measured.times_ms) > 0.3 * matmul
    assert measured.host_bound == len(measured.times_ms)
    assert measured.unseen_ms > 0.3 * matmul


@pytest.mark.gpu
@needs_gpu
def test_strict_gpu_timing_counts_host_work_inside_a_call() -> None:
    def slow(args: list[torch.Tensor]) -> torch.Tensor:
        time.sleep(0.002)
        return args[0] * 2

    measured = strict_on_gpu(slow, [torch.ones(1024, device="cuda")])
    assert statistics.median(measured.times_ms) >= 1.9


@pytest.mark.gpu
@needs_gpu
def test_strict_gpu_timing_keeps_the_outputs_of_chosen_calls_with_their_scales() -> None:
    base = torch.randn(4096, device="cuda")
    measured = strict_on_gpu(lambda args: args[0] * 2, [base], keep_at=(0.3, 0.6, 0.9))
    assert len(measured.kept) == 3
    for scale, (out,) in measured.kept:
        assert torch.allclose(out, base * scale * 2)


def test_floats_inside_list_arguments_are_scaled_and_named_tuples_stay_named() -> None:
    from collections import namedtuple

    from adaexplore.executor.worker._taskrun import clone_args, scaled_inputs

    x = torch.ones(3)
    indices = torch.arange(5)
    buffers = [[torch.empty(3), torch.empty(3)], indices, 2]
    pair, same, k = scaled_inputs([[x, 2 * x], indices, 2], 0.5, out=buffers)
    assert pair[0] is buffers[0][0] and torch.equal(pair[1], x) and k == 2
    assert same is indices  # integers are left as they are
    Pair = namedtuple("Pair", "a b")
    (scaled,) = scaled_inputs([Pair(x, x)], 0.5)
    assert isinstance(scaled, Pair) and torch.equal(scaled.a, x / 2)
    (copied,) = clone_args([Pair(x, indices)])
    assert isinstance(copied, Pair) and copied.a is not x and torch.equal(copied.b, indices)
