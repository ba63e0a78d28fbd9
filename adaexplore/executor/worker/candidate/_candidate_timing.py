"""The timing of a candidate's run: forward timed on the timing seed's inputs, each timed call held to the rules
of the trials (its own Triton launches, plain tensors out, the inputs left as they were), and the outputs of some
timed calls kept for the judge to check again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from adaexplore.domain import AuditFlag, Status
from adaexplore.executor.wire._protocol import Phase, TimeCandidate, Timed
from adaexplore.executor.worker.candidate._candidate_base import RunnerBase, cloned
from adaexplore.executor.worker.confine._errors import classify
from adaexplore.executor.worker.confine._faults import DisguisedOutput, OutputTooLarge
from adaexplore.executor.worker.confine._guard import Guard
from adaexplore.executor.worker.task._taskrun import ShadowedTensor, make_args
from adaexplore.executor.worker.timing._perturb import has_integer_inputs
from adaexplore.executor.worker.timing._timing import Timer, summarize

__all__ = ["Timing"]


class _TimedCallRefused(Exception):
    """A timed call broke a rule the trials hold every call to (raised inside the timing loop, which stops)."""


class Timing(RunnerBase):
    """The timing, and the choice of the timed calls whose outputs are checked again."""

    def _recheck_count(self, timing: TimeCandidate, max_output_elements: int | None) -> tuple[int, int]:
        """(the timed calls to keep for the judge, the elements kept of each output, 0 for all of them).

        Whole copies of as many calls as asked where they fit: in the sets of the device exchange (which the
        judge sized to the bytes allowed) or, for outputs written as files, in the bytes allowed (outputs of
        4-byte elements). Where they do not, every call asked for is kept as a sample of each output's elements,
        at positions drawn after the call (worker/timing/_kept.py), and a flag says so."""
        want = timing.recheck_calls
        if not want or not max_output_elements:
            # outputs of a size the judge did not state: as many as its device exchange holds, or as asked in files
            return (min(want, self.sink.sets) if self.sink is not None else want), 0
        room = self.sink.sets if self.sink is not None else timing.recheck_bytes // (4 * max_output_elements)
        if want <= room:
            return want, 0
        self.state.flags.append(
            AuditFlag(
                code="sampled_rechecks",
                severity="info",
                message=f"the outputs of {want} timed calls were checked again at {timing.recheck_sample} sampled "
                f"elements of each output, not whole: {want} whole copies of {max_output_elements} elements would "
                f"not fit in {timing.recheck_bytes >> 20} MiB",
            )
        )
        return want, timing.recheck_sample

    def _time(
        self,
        model: torch.nn.Module,
        task: Any,
        timing_seed: int,
        cast: torch.dtype | None,
        on_device: bool,
        timing: TimeCandidate,
        guard: Guard,
        exchange: Path,
        max_output_elements: int | None,
    ) -> None:
        self.channel.send(Phase(phase="timing"))
        calls = 0

        def call(args: list[Any]) -> Any:
            nonlocal calls
            calls += 1
            before = len(self.tracker.launches)  # the list count() fills while the timing runs
            out = model(*args)
            if self.tracker.refusals:
                raise _TimedCallRefused(self.tracker.refusals[0])
            if len(self.tracker.launches) == before:
                # each call on its own: outputs computed in other calls (token launches in a few, PyTorch in
                # the rest) are not this call's work
                raise _TimedCallRefused(
                    f"You cannot skip the Triton kernels in timed calls: timed call {calls} launched none of "
                    f"the candidate's kernels{self._empty_note()}. Every call must compute its outputs with a "
                    "Triton kernel."
                )
            # The types first, before anything iterates the result: a subclass of tuple would run code of its own,
            # inside the timed region or after it. Inside it (the timer stops after this returns), the outputs
            # are plain tensors that exist.
            kind = type(out)
            plain = list(out) if kind is tuple or kind is list else [out]
            if not all(type(t) is torch.Tensor for t in plain):
                kinds = sorted({type(t).__name__ for t in plain} if kind is tuple or kind is list else {kind.__name__})
                raise _TimedCallRefused(
                    "You cannot return anything but plain torch.Tensor objects, alone or in a plain tuple or list, "
                    f"from a timed call (timed call {calls} returned {', '.join(kinds)})."
                )
            return out

        try:
            base = self.timing_base
            if base is None:
                base = make_args(task, "get_inputs", timing_seed, self.device, cast, on_device=on_device)
            # on the timed calls' own values: a candidate that knows the trials' inputs cannot tell this call apart
            with self._numerics(), torch.no_grad():
                share = self.tracker.triton_share(lambda: model(*cloned(base)))
            if self.tracker.refusals:
                raise _TimedCallRefused(self.tracker.refusals[0])
            redraw = None
            if has_integer_inputs(base):

                def redraw(seed: int) -> list[Any]:
                    return make_args(task, "get_inputs", seed, self.device, cast, on_device=on_device)

            with self._numerics():
                # counting, so that each call can see its own launches (call() checks them)
                recheck, sample = self._recheck_count(timing, max_output_elements)
                measured, _ = self.tracker.count(
                    lambda: Timer(self.device).measure(
                        call,
                        base,
                        timing.timing,
                        budget_ms=timing.budget_ms,
                        min_reps=timing.min_reps,
                        max_reps=timing.max_reps,
                        recheck=recheck,
                        keep_limit=max_output_elements,
                        sample=sample,
                        redraw=redraw,
                    )
                )
            self._sync()
        except OutputTooLarge as exc:
            self._fail(Status.mismatch, str(exc))
        except (ShadowedTensor, DisguisedOutput, _TimedCallRefused) as exc:
            self._fail(Status.rejected, str(exc))
        except BaseException as exc:
            self._fail(classify(exc), "forward raised while being timed", exc, "timing")
        self._check(guard, "timing")
        if measured.changed_input is not None:
            self._fail(
                Status.rejected,
                f"You cannot modify the inputs: input {measured.changed_input} changed in a timed call (every "
                "call must leave its inputs as it found them)",
            )
        rechecks = [
            self._hand_over(tensors, k, exchange, f"recheck{k}") for k, (_, tensors) in enumerate(measured.kept)
        ]
        patterns = [pattern for pattern, _ in measured.kept]
        if self.device.type == "cuda":
            # Handed over: what timing held (its inputs, the kept outputs) goes back to the device before the judge
            # recomputes the kept calls' references beside this process, which waits idle meanwhile.
            measured.kept.clear()
            self.timing_base = None
            del base
            torch.cuda.empty_cache()
        self.channel.send(
            Timed(
                stats=summarize(measured.times_ms, timing.timing, measured.warmup_n),
                method=timing.timing.method,
                host_bound_calls=measured.host_bound,
                unseen_ms=measured.unseen_ms,
                rechecks=rechecks,
                recheck_patterns=patterns,
                recheck_calls=measured.kept_calls,
                timed_calls=measured.timed_calls,
                triton_time_share=share,
                flags=self.state.flags,
            )
        )
