"""Timing one model's forward calls, the same way for the reference and for the candidate.

Strict timing gives every call its own input buffers holding new values (the base inputs times a
scale that never repeats), flushes the L2 cache before each call, and counts the larger of the
device time (CUDA events on the current stream) and the host time (from before the launch until
the device is idle, less the fixed cost of that bracket), so work hidden on other streams or left
on the host after the last launch is counted. The other protocols time as their sources do.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from adaexplore.executor._models import Stats
from adaexplore.executor._modes import TimingSpec
from adaexplore.executor.worker._taskrun import flatten_output, scaled_inputs

__all__ = ["Measurement", "Timer", "call_scale", "summarize"]

_RING = 3  # buffers per input, so consecutive calls never see the same address


def call_scale(index: int) -> float:
    """The input scale of call `index`: distinct for every call, in (0.9375, 1], never above 1 so inputs
    stay in their domain (a probability stays below one, a positive value positive)."""
    return 1.0 - 0.0625 * ((index * 0.6180339887498949) % 1.0)


@dataclass
class Measurement:
    times_ms: list[float]
    warmup_n: int = 0
    host_bound: int = 0
    kept: list[tuple[float, list[torch.Tensor]]] = field(default_factory=list)


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


def _positions(fractions: tuple[float, ...], first: int, reps: int) -> set[int]:
    """Distinct call indices in [first, reps) near the given fractions of the run."""
    chosen: set[int] = set()
    free = list(range(first, reps))
    for fraction in fractions:
        if not free:
            break
        want = int(fraction * reps)
        index = min(free, key=lambda i: abs(i - want))
        free.remove(index)
        chosen.add(index)
    return chosen


class Timer:
    """Times calls on one device. On the CPU it uses the host clock alone (pipeline tests only)."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.cuda = device.type == "cuda"
        self._flush_buffers: dict[str, torch.Tensor] = {}
        self.bracket_ms = self._calibrate() if self.cuda else 0.0

    def _calibrate(self) -> float:
        """The host-side cost of the timing bracket itself, measured around a one-element kernel."""
        probe = torch.zeros(1, device=self.device)
        gaps = []
        for _ in range(30):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            start.record()
            probe.add_(1)
            end.record()
            torch.cuda.synchronize()
            host = (time.perf_counter() - t0) * 1e3
            gaps.append(host - start.elapsed_time(end))
        return max(0.0, statistics.median(gaps))

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
        keep_at: tuple[float, ...] = (),
    ) -> Measurement:
        """Warm up, then time `call(inputs)`; outputs of the calls at the fractions `keep_at` are kept."""
        rings: list[list[Any]] = []
        if spec.fresh_inputs:
            rings = [[v.clone() if isinstance(v, torch.Tensor) else v for v in base] for _ in range(_RING)]
        counter = 0

        def inputs() -> tuple[float, list[Any]]:
            nonlocal counter
            index = counter
            counter += 1
            if not spec.fresh_inputs:
                return 1.0, base
            scale = call_scale(index)
            return scale, scaled_inputs(base, scale, out=rings[index % _RING])

        grad = torch.no_grad() if spec.no_grad else contextlib.nullcontext()
        with grad:
            warm: list[float] = []
            started = time.perf_counter()
            while len(warm) < max(1, spec.warmup_calls) or (
                (time.perf_counter() - started) * 1e3 < spec.warmup_ms and len(warm) < max_reps
            ):
                warm.append(self._one(call, inputs()[1], spec)[0])
            if spec.reps is None:
                # the last calls, made at the clocks the timed calls will see
                estimate = max(statistics.median(warm[-max(1, spec.warmup_calls) :]), 1e-3)
                reps = max(min_reps, min(max_reps, int(budget_ms / estimate)))
            else:
                reps = spec.reps + spec.discard_first
            keep = _positions(keep_at, spec.discard_first, reps)
            result = Measurement(times_ms=[], warmup_n=len(warm) + min(spec.discard_first, reps))
            for rep in range(reps):
                scale, args = inputs()
                counted, host_bound, out = self._one(call, args, spec)
                if rep < spec.discard_first:
                    continue
                result.times_ms.append(counted)
                result.host_bound += host_bound
                if rep in keep:
                    result.kept.append((scale, [t.detach().clone() for t in flatten_output(out)]))
                del out
        return result

    def _one(self, call: Callable[[list[Any]], Any], args: list[Any], spec: TimingSpec) -> tuple[float, int, Any]:
        if not self.cuda:
            t0 = time.perf_counter()
            out = call(args)
            return (time.perf_counter() - t0) * 1e3, 0, out
        self._flush(spec.flush_l2)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        start.record()
        out = call(args)
        end.record()
        torch.cuda.synchronize()
        host = (time.perf_counter() - t0) * 1e3 - self.bracket_ms
        device = start.elapsed_time(end)
        if not spec.fresh_inputs:  # KernelBench and paper protocols: device time only
            return device, 0, out
        host_bound = int(host > device * 1.05 + 0.005)
        return max(device, host), host_bound, out
