"""The timing loop's warm-up, call count and kept outputs, on the host clock (no GPU needed)."""

from __future__ import annotations

import os
import statistics
import time

import pytest
import torch

from adaexplore.executor.wire._modes import Mode, mode_spec
from adaexplore.executor.wire._protocol import InputPattern
from adaexplore.executor.worker.timing._perturb import PatternSource, apply_pattern, factor_pool, pool_size
from adaexplore.executor.worker.timing._timing import Sampler, Timer, caught


def sleeper(ms: float, seen: list[tuple[float, ...]], at: list[float] | None = None):
    def call(args: list[torch.Tensor]) -> torch.Tensor:
        seen.append(tuple(args[0].flatten().tolist()))
        if at is not None:
            at.append(time.perf_counter())
        time.sleep(ms / 1e3)
        return args[0] * 2

    return call


def test_strict_warm_up_runs_for_its_time_before_the_timed_calls() -> None:
    spec = mode_spec(Mode.strict).timing
    assert spec.warmup_ms >= 50 and spec.warmup_calls >= 1
    seen: list[tuple[float, ...]] = []
    at: list[float] = []
    measured = Timer(torch.device("cpu")).measure(
        sleeper(2.0, seen, at), [torch.ones(4)], spec, budget_ms=40, min_reps=5, max_reps=1000
    )
    # 2 ms calls: the warm-up goes on for its time, far past warmup_calls, and only then are calls timed
    assert measured.warmup_n > spec.warmup_calls
    # (within 1 ms: the clock starts a little before the first call and is read a little before each)
    assert (at[measured.warmup_n] - at[0]) * 1e3 >= spec.warmup_ms - 1.0
    # and stops once that time is up: each call sleeps 2 ms, so no more calls than fit in it start (a pause of
    # the host makes fewer; a clock read between calls, not the calls' start times, decides)
    assert measured.warmup_n <= spec.warmup_ms / 2.0 + 2
    # the timed calls follow the budget, estimated from calls made at the end of the warm-up
    assert 5 <= len(measured.times_ms) <= 40 / 2.0 + 1
    assert len(seen) == measured.warmup_n + len(measured.times_ms)
    # every call saw inputs of its own, each element within 1/16 of the base and never above it
    assert len(set(seen)) == len(seen)
    assert all(0.9375 < value <= 1.0 for inputs in seen for value in inputs)


def test_the_inputs_of_timed_calls_cannot_be_foreseen() -> None:
    # Two measurements of the same call with the same inputs draw different factors: a candidate that
    # computed outputs ahead for the inputs to come would look up the wrong ones.
    spec = mode_spec(Mode.strict).timing.model_copy(update={"warmup_ms": 0.0})
    first: list[tuple[float, ...]] = []
    second: list[tuple[float, ...]] = []
    for seen in (first, second):
        Timer(torch.device("cpu")).measure(
            sleeper(0.0, seen), [torch.ones(4)], spec, budget_ms=1, min_reps=20, max_reps=20
        )
    assert len(first) == len(second) >= 20
    assert not set(first) & set(second)


def test_fixed_protocols_warm_up_by_count_alone() -> None:
    spec = mode_spec(Mode.paper).timing
    assert spec.warmup_ms == 0
    seen: list[tuple[float, ...]] = []
    measured = Timer(torch.device("cpu")).measure(
        sleeper(0.1, seen), [torch.ones(4)], spec, budget_ms=40, min_reps=5, max_reps=1000, recheck=5
    )
    assert measured.warmup_n == spec.warmup_calls
    assert len(measured.times_ms) == spec.reps
    assert set(seen) == {(1.0,) * 4}  # the paper's protocol reuses one input
    # its timed calls are rechecked too, on that one input
    assert len(measured.kept) == 5 and all(pattern is None for pattern, _ in measured.kept)


def test_the_sampler_keeps_exactly_as_many_calls_as_asked_anywhere_in_the_run() -> None:
    runs = []
    for _ in range(400):
        sampler = Sampler(44, 100)
        runs.append([i for i in range(100) if sampler.take()])
    assert all(len(kept) == 44 for kept in runs)
    # every position is chosen about as often (44 %), the last ones included: no call is known to be unchecked
    counts = [sum(i in kept for kept in runs) for i in range(100)]
    assert min(counts) > 0.3 * 400 and max(counts) < 0.6 * 400
    assert len({tuple(kept) for kept in runs}) == 400
    short = Sampler(44, 10)  # fewer calls than wanted: all of them
    assert [short.take() for _ in range(11)] == [True] * 10 + [False]


def test_44_rechecks_catch_a_kernel_wrong_in_one_call_in_ten_with_probability_099() -> None:
    assert caught(44) >= 0.99 > caught(43)
    # a kernel wrong in every tenth call (not at random): kept subsets of 1000 calls hit one nearly always
    missed = 0
    for _ in range(300):
        sampler = Sampler(44, 1000)
        missed += not any(sampler.take() and i % 10 == 9 for i in range(1000))
    assert missed <= 12  # 1 % of 300 is 3; 12 is far in the tail


def rebuilt(base: list[torch.Tensor], pattern) -> list[torch.Tensor]:  # type: ignore[no-untyped-def]
    """A call's inputs as the judge rebuilds them: from the base, the pattern and nothing else."""
    pool = factor_pool(pattern.key, pool_size(base, pattern.congruent), base[0].device)
    return apply_pattern(base, pattern, pool)


def test_outputs_of_chosen_calls_are_kept_with_the_pattern_that_rebuilds_their_inputs() -> None:
    spec = mode_spec(Mode.strict).timing.model_copy(update={"warmup_ms": 0.0})
    base = [torch.randn(8, 5)]
    seen: list[tuple[float, ...]] = []
    measured = Timer(torch.device("cpu")).measure(
        sleeper(0.1, seen), base, spec, budget_ms=5, min_reps=20, max_reps=20, recheck=2
    )
    assert len(measured.kept) == 2
    for pattern, (out,) in measured.kept:
        assert pattern is not None
        (inputs,) = rebuilt(base, pattern)
        assert torch.equal(out, inputs * 2)  # bit for bit
        assert tuple(inputs.flatten().tolist()) in seen


def test_timed_inputs_are_not_one_scale_of_the_base_or_of_each_other() -> None:
    # For a linear task a single scale on the inputs is the same scale on the outputs: a candidate could
    # rescale an output it computed once. The factors differ from element to element instead.
    base = [torch.ones(32, 32)]
    source = PatternSource(base)
    assert source.pool is not None
    first, second = (apply_pattern(base, source.next(), source.pool)[0] for _ in range(2))
    assert torch.linalg.matrix_rank(first.double()) > 1  # base times one scale would be rank one
    ratio = first / second
    assert float(ratio.max() - ratio.min()) > 0.01


def test_timed_inputs_keep_symmetry_zeros_and_signs() -> None:
    a = torch.randn(3, 6, 6, dtype=torch.float64)
    symmetric = a + a.transpose(-1, -2)
    spd = (lambda m: m @ m.T + 6 * torch.eye(6))(torch.randn(6, 6)).to(torch.bfloat16)
    triangular = torch.triu(torch.randn(7, 7))
    indices = torch.arange(4)
    base = [symmetric, [spd, triangular], indices]
    source = PatternSource(base)
    assert source.congruent == [True, True, False]
    assert source.pool is not None
    for _ in range(3):
        pattern = source.next()
        sym, (pd, tri), same = apply_pattern(base, pattern, source.pool)
        assert torch.equal(sym, sym.transpose(-1, -2)) and not torch.equal(sym, symmetric)
        assert torch.equal(pd, pd.T) and torch.linalg.eigvalsh(pd.double()).min() > 0
        assert torch.equal(tri.tril(-1), torch.zeros(7, 7)) and torch.equal(tri.sign(), triangular.sign())
        assert same is indices  # integers are left as they are
        assert [t.dtype for t in (sym, pd, tri)] == [torch.float64, torch.bfloat16, torch.float32]
        rebuilt_sym, (rebuilt_pd, rebuilt_tri), _ = rebuilt([symmetric, [spd, triangular], indices], pattern)
        assert torch.equal(rebuilt_sym, sym) and torch.equal(rebuilt_pd, pd) and torch.equal(rebuilt_tri, tri)


def test_sorted_inputs_stay_sorted_and_are_rebuilt_bit_for_bit() -> None:
    # bin edges a kernel searches, rows of a cumulative table, a descending schedule: per-element factors
    # would swap close neighbours, so these are sorted again after scaling
    edges = torch.linspace(-4, 4, 257)
    edges[100:104] = edges[100]  # ties too
    table = torch.cumsum(torch.rand(6, 50, dtype=torch.float64), dim=-1)
    schedule = torch.linspace(1, 0.5, 33).to(torch.bfloat16)
    noise = torch.randn(5, 40)
    base = [edges, [table, schedule], noise]
    source = PatternSource(base)
    assert source.order == [1, 1, -1, 0]
    assert source.pool is not None
    for _ in range(3):
        pattern = source.next()
        e, (t, d), n = apply_pattern(base, pattern, source.pool)
        assert torch.equal(e, e.sort().values) and not torch.equal(e, edges)
        assert torch.equal(t, t.sort(dim=-1).values)
        assert torch.equal(d, d.sort(descending=True).values) and d.dtype == torch.bfloat16
        o = pattern.offsets[3]
        assert torch.equal(n, noise * source.pool[o : o + noise.numel()].view(noise.shape))  # only scaled
        # scaled, then sorted: the values are the scaled base's
        assert torch.equal(e, (edges * source.pool[pattern.offsets[0] : pattern.offsets[0] + 257]).sort().values)
        # as the judge gets it: through the worker's message
        pattern = InputPattern.model_validate_json(pattern.model_dump_json())
        rebuilt_e, (rebuilt_t, rebuilt_d), rebuilt_n = rebuilt(base, pattern)
        assert all(torch.equal(a, b) for a, b in [(rebuilt_e, e), (rebuilt_t, t), (rebuilt_d, d), (rebuilt_n, n)])


def test_patterns_apply_to_odd_inputs() -> None:
    # a transposed view, an expanded row, a scalar, an empty tensor and one that requires grad
    base = [
        torch.randn(4, 6).t(),
        torch.randn(1, 5).expand(3, 5),
        torch.tensor(2.0),
        torch.empty(0, 3),
        torch.randn(3, requires_grad=True),
    ]
    source = PatternSource(base)
    assert source.pool is not None
    buffers = [t.clone() for t in base]
    for out in (None, buffers):
        made = apply_pattern(base, source.next(), source.pool, out=out)
        for before, after in zip(base, made, strict=True):
            assert after.shape == before.shape and after.dtype == before.dtype
            ratio = (after / before).flatten()
            assert bool(((ratio > 0.9375) & (ratio <= 1.0)).all())


def test_tasks_with_integer_inputs_draw_every_timed_calls_inputs_anew() -> None:
    # Integer inputs cannot be scaled; work that depends on them alone would otherwise repeat call after call.
    spec = mode_spec(Mode.strict).timing.model_copy(update={"warmup_ms": 0.0})

    def draw(seed: int) -> list[torch.Tensor]:
        generator = torch.Generator().manual_seed(seed)
        return [torch.randint(0, 1000, (6,), generator=generator), torch.rand(3, generator=generator)]

    seen: list[tuple[float, ...]] = []
    measured = Timer(torch.device("cpu")).measure(
        sleeper(0.0, seen), draw(1), spec, budget_ms=1, min_reps=20, max_reps=20, recheck=1, redraw=draw
    )
    assert len(seen) >= 20 and len(set(seen)) == len(seen)  # the ids of every call are new
    ((pattern, (out,)),) = measured.kept
    assert pattern is not None and pattern.seed is not None
    assert torch.equal(out, draw(pattern.seed)[0] * 2)  # what the judge draws from the pattern's seed


def test_the_factor_pool_depends_on_its_key_alone() -> None:
    pool = factor_pool(7, 5000, torch.device("cpu"))
    assert torch.equal(pool, factor_pool(7, 5000, torch.device("cpu")))
    assert torch.equal(pool[:1000], factor_pool(7, 1000, torch.device("cpu")))
    assert not torch.equal(pool, factor_pool(8, 5000, torch.device("cpu")))
    assert float(pool.min()) > 0.9375 and float(pool.max()) <= 1.0
    assert pool.unique().numel() > 4900  # no short period


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
def test_strict_gpu_timing_keeps_the_outputs_of_chosen_calls_with_their_patterns() -> None:
    a = torch.randn(64, 64, device="cuda")
    edges = torch.linspace(-3, 3, 1025, device="cuda")
    base = [torch.randn(4096, device="cuda"), a + a.T, edges]
    measured = strict_on_gpu(
        lambda args: (args[0].sum() * args[1], torch.bucketize(args[0], args[2])), base, recheck=44
    )
    assert len(measured.kept) == 44
    for pattern, (out, buckets) in measured.kept:
        assert pattern is not None and pattern.congruent == [False, True, False] and pattern.order == [0, 0, 1]
        x, sym, e = rebuilt(base, pattern)
        assert torch.equal(out, x.sum() * sym)
        assert torch.equal(e, e.sort().values) and torch.equal(buckets, torch.bucketize(x, e))


@pytest.mark.gpu
@needs_gpu
def test_the_factor_pool_is_the_same_on_the_gpu_and_the_cpu() -> None:
    # The judge rebuilds a timed call's inputs on its own device: the factors must not depend on it.
    assert torch.equal(
        factor_pool(99, 1 << 21, torch.device("cuda")).cpu(), factor_pool(99, 1 << 21, torch.device("cpu"))
    )


def test_floats_inside_list_arguments_are_scaled_and_named_tuples_stay_named() -> None:
    from collections import namedtuple

    from adaexplore.executor.worker.task._taskrun import clone_args

    x = torch.ones(3)
    indices = torch.arange(5)
    buffers = [[torch.empty(3), torch.empty(3)], indices, 2]
    base = [[x, 2 * x], indices, 2]
    source = PatternSource(base)
    assert source.pool is not None
    pair, same, k = apply_pattern(base, source.next(), source.pool, out=buffers)
    assert pair[0] is buffers[0][0] and k == 2
    assert float((pair[1] / (2 * x)).max()) <= 1.0 and not torch.equal(pair[1], 2 * x)
    assert same is indices  # integers are left as they are
    Pair = namedtuple("Pair", "a b")
    named = [Pair(x, x)]
    (scaled,) = apply_pattern(named, PatternSource(named).next(), factor_pool(1, 1 << 21, x.device))
    assert isinstance(scaled, Pair) and float(scaled.a.max()) <= 1.0
    (copied,) = clone_args([Pair(x, indices)])
    assert isinstance(copied, Pair) and copied.a is not x and torch.equal(copied.b, indices)


def test_a_candidate_that_replaces_pythons_randomness_cannot_steer_which_calls_are_rechecked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A lazy candidate that made every draw say "not this one" would be kept only on its last 44 calls, and one
    # that made them say "this one" only on its first 44: it would be honest there and nowhere else. The choice
    # draws from the system's randomness as the sampler took it at import, which no such patch reaches.
    import random
    import secrets

    monkeypatch.setattr(secrets, "randbelow", lambda n: n - 1)
    monkeypatch.setattr(secrets, "randbits", lambda k: 0)
    monkeypatch.setattr(os, "urandom", lambda n: b"\xff" * n)
    monkeypatch.setattr(random, "random", lambda: 0.999)
    runs = []
    for _ in range(200):
        sampler = Sampler(44, 100)
        kept = [i for i in range(100) if sampler.take()]
        assert sampler.taken == kept  # the verdict names the call by this number
        runs.append(kept)
    assert sum(kept[0] < 56 for kept in runs) == 200  # not forced to the last 44
    assert len({tuple(kept) for kept in runs}) == 200  # not forced to any fixed set


def test_replacing_the_samplers_own_randomness_is_caught() -> None:
    from adaexplore.executor.worker.confine._guard import Guard
    from adaexplore.executor.worker.timing import _sampler

    guard = Guard()
    saved = _sampler._URANDOM
    try:
        _sampler._URANDOM = lambda n: b"\x00" * n  # every call kept until the 44 are used up: the first 44
        flags = guard.check("timing")
    finally:
        _sampler._URANDOM = saved
    assert any(f.code == "monkey_patch" and "_sampler._URANDOM" in f.message for f in flags), flags
