"""Timing one model's forward calls, the same way for the reference and for the candidate.

Strict timing gives every call its own input buffers holding new values (the base inputs times factors
that differ from element to element and from call to call, drawn in secret: worker/timing/_perturb.py) and
flushes the L2 cache before each call. Calls
run in chunks enqueued back to back, each bracketed by its own CUDA events, so the host's launch latency
hides behind the previous call as it does in `triton.testing.do_bench` and in a real model; the first
call after a synchronization, which pays that latency on an idle queue, is not counted. Each chunk opens
with one probe call run alone: the time the device stays busy after the current stream has finished the
call is work the events cannot see (kernels on other streams that the current one never waits for). When
the probes show such work, its median is added to every timed call. Host work inside a call shows in the
events: once it outlasts the device work, the queue runs dry and the gaps are timed. The other protocols
time as their sources do, one synchronized call at a time. In every protocol the outputs of some timed
calls, chosen after each call returns (Sampler), are copied for the judge to check again.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from adaexplore.domain import Stats
from adaexplore.executor.wire._modes import TimingSpec
from adaexplore.executor.wire._protocol import InputPattern
from adaexplore.executor.worker.task._taskrun import clone_args
from adaexplore.executor.worker.timing._kept import Sampled, kept_copy
from adaexplore.executor.worker.timing._perturb import PatternSource, apply_pattern
from adaexplore.executor.worker.timing._sampler import Sampler, caught

__all__ = ["Kept", "Measurement", "Sampler", "Timer", "caught", "summarize"]

_RING = 3  # buffers per input, so consecutive calls never see the same address
# a kept call: the pattern of its inputs (None where calls reuse the base), and its outputs or their samples
Kept = tuple[InputPattern | None, list[torch.Tensor | Sampled]]


_MIN_CHUNK, _MAX_CHUNK = 6, 100
_CHUNK_MS = 20.0  # timed calls per chunk: about this long, within the two bounds above


def _chunk_size(estimate_ms: float) -> int:
    return max(_MIN_CHUNK, min(_MAX_CHUNK, int(_CHUNK_MS / max(estimate_ms, 1e-3))))


@dataclass
class _Chunk:
    times_ms: list[float]
    excess_ms: float
    calls: int  # all calls made, the probe and the uncounted one included
    kept: list[Kept]
    # the chunk's first kept call's pattern and its inputs as the call left them (copies)
    kept_inputs: tuple[InputPattern | None, list[torch.Tensor]] | None = None


@dataclass
class Measurement:
    times_ms: list[float]
    warmup_n: int = 0
    host_bound: int = 0
    # Median over the chunks' probes of how long the device stayed busy after the current stream was done.
    unseen_ms: float = 0.0
    # (the pattern of the call's inputs, None where calls reuse the base; its outputs)
    kept: list[Kept] = field(default_factory=list)
    # the first input a kept call changed (its index), None where none did
    changed_input: int | None = None
    # each kept call's number among the timed calls (from 0), in the order of `kept`
    kept_calls: list[int] = field(default_factory=list)
    # how many calls were timed
    timed_calls: int = 0


def _tensors_of(args: list[Any]) -> list[torch.Tensor]:
    return [t.detach().clone() for t in flatten_args(args)]


def flatten_args(args: list[Any]) -> list[torch.Tensor]:
    found: list[torch.Tensor] = []
    for value in args:
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, list | tuple):
            found.extend(flatten_args(list(value)))
    return found


def _first_changed(after: list[torch.Tensor], before: list[torch.Tensor]) -> int | None:
    for index, (now, then) in enumerate(zip(after, before, strict=True)):
        if now.shape != then.shape or now.dtype != then.dtype or not torch.equal(now.nan_to_num(), then.nan_to_num()):
            return index
    return None


def summarize(times_ms: list[float], spec: TimingSpec, warmup_n: int = 0) -> Stats:
    values = sorted(times_ms)
    n = len(values)

    def pct(q: float) -> float:
        return values[min(n - 1, max(0, round(q * (n - 1))))]

    trimmed = None
    if spec.statistic == "trimmed_mean":
        cut = int(n * spec.trim_fraction / 2)
        kept = values[cut : n - cut] or values
        trimmed = sum(kept) / len(kept)
    return Stats(
        n=n,
        warmup_n=warmup_n,
        median_ms=statistics.median(values),
        mean_ms=sum(values) / n,
        std_ms=statistics.pstdev(values) if n > 1 else 0.0,
        min_ms=values[0],
        max_ms=values[-1],
        p10_ms=pct(0.1),
        p90_ms=pct(0.9),
        trimmed_mean_ms=trimmed,
    )


class Timer:
    """Times calls on one device. On the CPU it uses the host clock alone (pipeline tests only)."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.cuda = device.type == "cuda"
        self._flush_buffers: dict[str, torch.Tensor] = {}
        self.idle_sync_ms = self._calibrate() if self.cuda else 0.0

    def _calibrate(self) -> float:
        """What `torch.cuda.synchronize()` costs when the device is already idle."""
        torch.zeros(1, device=self.device).add_(1)
        costs = []
        for _ in range(30):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            torch.cuda.synchronize()
            costs.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(costs)

    def _flush(self, how: str) -> None:
        if not self.cuda or how == "none":
            return
        buffer = self._flush_buffers.get(how)
        if buffer is None:
            if how == "device":
                l2 = torch.cuda.get_device_properties(self.device).L2_cache_size
                buffer = torch.empty(max(2 * l2, 1 << 20), dtype=torch.int8, device=self.device)
            else:  # KernelBench: a 256 MiB fill
                buffer = torch.empty(32 * 1024 * 1024, dtype=torch.int64, device=self.device)
            self._flush_buffers[how] = buffer
        if how == "device":
            buffer.zero_()
        else:
            buffer.fill_(42)

    def measure(
        self,
        call: Callable[[list[Any]], Any],
        base: list[Any],
        spec: TimingSpec,
        *,
        budget_ms: float,
        min_reps: int,
        max_reps: int,
        recheck: int = 0,
        keep_limit: int | None = None,
        sample: int = 0,
        redraw: Callable[[int], list[Any]] | None = None,
    ) -> Measurement:
        """Warm up, then time `call(inputs)`; the outputs of `recheck` timed calls, chosen by a Sampler, are
        kept (copies, refused with OutputTooLarge past `keep_limit` elements; with `sample`, that many elements
        of each larger output: worker/timing/_kept.py). With fresh inputs, `redraw` (a
        seed -> that seed's inputs) makes every call's inputs a new draw, for tasks with integer inputs
        (worker/timing/_perturb.py)."""
        rings: list[list[Any]] = []
        patterns: PatternSource | None = None
        pristine = clone_args(list(base)) if recheck else []
        if spec.fresh_inputs:
            patterns = PatternSource(base, redraw)
            rings = [clone_args(list(base)) for _ in range(_RING)] if patterns.pool is not None else []
        counter = 0

        def inputs() -> tuple[InputPattern | None, list[Any]]:
            nonlocal counter
            index = counter
            counter += 1
            made = patterns.inputs(base, rings[index % _RING] if rings else None) if patterns is not None else None
            return made if made is not None else (None, base)

        def given(pattern: InputPattern | None) -> list[torch.Tensor]:
            """The inputs of a call of `pattern` as they were made, rebuilt from the untouched base."""
            if pattern is None or patterns is None:
                return flatten_args(pristine)
            if pattern.seed is not None and patterns.redraw is not None:
                return flatten_args(patterns.redraw(pattern.seed))
            assert patterns.pool is not None  # a scaled pattern: only a source with a pool makes one
            return flatten_args(apply_pattern(pristine, pattern, patterns.pool))

        grad = torch.no_grad() if spec.no_grad else contextlib.nullcontext()
        with grad:
            if self.cuda and spec.pipelined:
                measured = self._measure_pipelined(
                    call,
                    inputs,
                    spec,
                    budget_ms=budget_ms,
                    min_reps=min_reps,
                    max_reps=max_reps,
                    recheck=recheck,
                    keep_limit=keep_limit,
                    sample=sample,
                    given=given,
                )
                return measured
            warm: list[float] = []
            started = 0.0
            while len(warm) < max(1, spec.warmup_calls) or (
                (time.perf_counter() - started) * 1e3 < spec.warmup_ms and len(warm) < max_reps
            ):
                args = inputs()[1]
                if not warm:
                    # the warm-up's time counts from its first call, not from making that call's inputs
                    started = time.perf_counter()
                warm.append(self._one(call, args, spec)[0])
            if spec.reps is None:
                # the last calls, made at the clocks the timed calls will see
                estimate = max(statistics.median(warm[-max(1, spec.warmup_calls) :]), 1e-3)
                reps = max(min_reps, min(max_reps, int(budget_ms / estimate)))
            else:
                reps = spec.reps + spec.discard_first
            sampler = Sampler(recheck, reps - spec.discard_first)
            result = Measurement(times_ms=[], warmup_n=len(warm) + min(spec.discard_first, reps))
            for rep in range(reps):
                pattern, args = inputs()
                counted, out = self._one(call, args, spec)
                if rep < spec.discard_first:
                    continue
                result.times_ms.append(counted)
                if sampler.take():
                    result.kept.append((pattern, kept_copy(out, keep_limit, sample)))
                    if result.changed_input is None:
                        result.changed_input = _first_changed(_tensors_of(args), given(pattern))
                del out
            result.kept_calls, result.timed_calls = sampler.taken, len(result.times_ms)
        return result

    # strict: chunks of calls enqueued back to back ------------------------------------------------
    def _measure_pipelined(
        self,
        call: Callable[[list[Any]], Any],
        inputs: Callable[[], tuple[InputPattern | None, list[Any]]],
        spec: TimingSpec,
        *,
        budget_ms: float,
        min_reps: int,
        max_reps: int,
        recheck: int,
        keep_limit: int | None,
        sample: int,
        given: Callable[[InputPattern | None], list[torch.Tensor]],
    ) -> Measurement:
        warmup_n = 0
        size = _MIN_CHUNK
        started = time.perf_counter()
        while warmup_n < max(1, spec.warmup_calls) or (
            (time.perf_counter() - started) * 1e3 < spec.warmup_ms and warmup_n < max_reps
        ):
            last = self._chunk(call, inputs, spec, size, None, keep_limit=keep_limit, sample=sample)
            warmup_n += last.calls
            size = _chunk_size(statistics.median(last.times_ms))
        # the last chunk, run at the clocks the timed calls will see
        estimate = max(statistics.median(last.times_ms) + max(0.0, last.excess_ms), 1e-3)
        reps = spec.reps if spec.reps is not None else max(min_reps, min(max_reps, int(budget_ms / estimate)))
        size = _chunk_size(estimate)
        sampler = Sampler(recheck, reps)
        result = Measurement(times_ms=[], warmup_n=warmup_n)
        device: list[float] = []
        excess: list[float] = []
        while len(device) < reps:
            n = min(size, reps - len(device))
            chunk = self._chunk(call, inputs, spec, n, sampler, keep_limit=keep_limit, sample=sample)
            device.extend(chunk.times_ms)
            excess.append(chunk.excess_ms)
            result.warmup_n += chunk.calls - n
            result.kept.extend(chunk.kept)
            if result.changed_input is None and chunk.kept_inputs is not None:
                result.changed_input = _first_changed(chunk.kept_inputs[1], given(chunk.kept_inputs[0]))
        result.kept_calls, result.timed_calls = sampler.taken, len(device)
        hidden = statistics.median(excess)
        result.unseen_ms = hidden
        if hidden > 0.05 * statistics.median(device) + 0.005:
            result.times_ms = [t + hidden for t in device]
            result.host_bound = len(device)
        else:
            result.times_ms = device
        return result

    def _chunk(
        self,
        call: Callable[[list[Any]], Any],
        inputs: Callable[[], tuple[InputPattern | None, list[Any]]],
        spec: TimingSpec,
        n: int,
        sampler: Sampler | None,
        *,
        keep_limit: int | None,
        sample: int,
    ) -> _Chunk:
        """A probe call alone, an uncounted call from an idle queue, then `n` timed calls back to back. The
        outputs of the timed calls `sampler` chooses are copied on the stream right after the call's end
        event, so the copy is not timed and sees the outputs as the next work on the stream would."""
        _, args = inputs()
        self._flush(spec.flush_l2)
        end = torch.cuda.Event()
        torch.cuda.synchronize()
        out = call(args)
        end.record()
        end.synchronize()  # the current stream is done with the call
        t0 = time.perf_counter()
        torch.cuda.synchronize()  # and the rest of the device
        excess = (time.perf_counter() - t0) * 1e3 - self.idle_sync_ms
        del out
        events = []
        kept: list[Kept] = []
        kept_inputs: tuple[InputPattern | None, list[torch.Tensor]] | None = None
        for index in range(n + 1):
            pattern, args = inputs()
            self._flush(spec.flush_l2)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            out = call(args)
            end.record()
            events.append((start, end))
            if index > 0 and sampler is not None and sampler.take():
                kept.append((pattern, kept_copy(out, keep_limit, sample)))
                if kept_inputs is None:
                    kept_inputs = (pattern, _tensors_of(args))
            del out
        torch.cuda.synchronize()
        return _Chunk(
            times_ms=[a.elapsed_time(b) for a, b in events[1:]],
            excess_ms=excess,
            calls=n + 2,
            kept=kept,
            kept_inputs=kept_inputs,
        )

    def _one(self, call: Callable[[list[Any]], Any], args: list[Any], spec: TimingSpec) -> tuple[float, Any]:
        """One call alone: device time by CUDA events (host time on the CPU)."""
        if not self.cuda:
            t0 = time.perf_counter()
            out = call(args)
            return (time.perf_counter() - t0) * 1e3, out
        self._flush(spec.flush_l2)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        out = call(args)
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end), out
