"""Full coverage at full size: does a forward, followed at the task's full sizes on shape-only tensors, write every
element of every output?

The compile check runs the forward at full size on PyTorch's `meta` device, where nothing is computed. Alongside it,
this recorder follows every buffer made by `torch.empty` (and its kin) and what is written into it: by each Triton
launch (where its stores may write, from its Triton IR with the launch's arguments, `_coverage_launch`), and by each
PyTorch operator that writes into it. An operator that reads elements nobody wrote passes the hole on to what it
makes (element by element where it maps elements one to one, else to the whole of what it makes); so does a launch
that surely loads such elements. At the end, each output's elements that were never written are a gap: the kernel
leaves them as `torch.empty` found them, which on a GPU is whatever the memory held.

Where a launch's reach cannot be followed (addresses or bounds that depend on data, a walk past its time), it is
taken as writing everywhere it might: a gap found is certain, a gap missed is possible. An autotuned kernel's
configs are each followed, and an element counts as written only where every config writes it (the GPU's autotuner
may pick any of them).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from adaexplore.executor.wire._protocol import Coverage, CoverageGap
from adaexplore.executor.worker.confine._compile_clock import compiling
from adaexplore.executor.worker.coverage._coverage_held import (
    EMPTY,
    SELECTIVE,
    SHAPE_ONLY,
    WRITE_ONLY,
    Held,
    from_storage,
    mapped,
    named,
    storage_key,
    tensors_in,
    writers,
)
from adaexplore.executor.worker.coverage._coverage_launch import Reach, launch_reach
from adaexplore.executor.worker.coverage._coverage_views import element_index, view_spans
from adaexplore.executor.worker.coverage._ir_walk_spans import intersect, subtract, total

__all__ = ["COVERAGE_BUDGET_S", "CoverageRecorder"]

# the CPU seconds the check may spend in one evaluation (CPU time, of the walking thread: a busy machine changes
# nothing it finds); past them, launches are taken as writing everywhere they might
COVERAGE_BUDGET_S = 3.0


class CoverageRecorder:
    """Follows the buffers of one full-size forward (see the module's doc): its operators through `watching()`, its
    launches through `launch()`."""

    def __init__(self, shared_memory_limit: int | None = None, budget_s: float = COVERAGE_BUDGET_S) -> None:
        self.shared_memory_limit = shared_memory_limit
        self.broken = False
        self.failed = ""  # the check's own failure, where it failed
        self.held: dict[int, Held] = {}
        self.budget_s = budget_s
        self.spent = 0.0  # the seconds spent following, all told (the verdict's `coverage` phase)
        self.cpu_spent = 0.0  # ... in CPU time, which the budget counts
        self.notes: list[str] = []
        self.launches = 0
        # an autotuned kernel's configs, each config's reach, until the group is done
        self._group: Any = None
        self._configs: list[Reach] = []

    def watching(self) -> TorchDispatchMode:
        return _Watch(self)

    # ---- buffers -------------------------------------------------------------------------------------------
    def made(self, t: torch.Tensor) -> None:
        storage = t.untyped_storage()
        self.held[storage_key(t)] = Held(storage, storage.nbytes())

    def of(self, t: torch.Tensor) -> Held | None:
        return self.held.get(storage_key(t)) if isinstance(t, torch.Tensor) else None

    def holes_in(self, t: torch.Tensor) -> tuple[Held, np.ndarray] | None:
        """The bytes of `t` never written, where `t` is (a view of) a followed buffer and some are."""
        held = self.of(t)
        if held is None or held.everywhere:
            return None
        spans = view_spans(t)
        if spans is None:
            return None
        holes = held.holes(spans)
        return (held, holes) if len(holes) else None

    # ---- launches ------------------------------------------------------------------------------------------
    def launch(
        self, jit: Any, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Any, kernel: Any, group: Any
    ) -> None:
        """A launch the compile-only pass just compiled; `group` is the autotuned kernel's group of configs (None:
        not autotuned). Never raises: what it cannot follow is noted, and taken as writing everywhere."""
        if self.broken:
            return
        started, cpu_started = time.perf_counter(), time.thread_time()
        # the evaluator's own work, like the compiler's: told as such, so the candidate's budget is not charged
        with compiling(f"{getattr(jit, '__name__', '?')} (followed for full coverage)"):
            try:
                self._launch(jit, args, kwargs, grid, kernel, group)
            except Exception as exc:
                self.fail(exc)
        self.spent += time.perf_counter() - started
        self.cpu_spent += time.thread_time() - cpu_started

    def _launch(
        self, jit: Any, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Any, kernel: Any, group: Any
    ) -> None:
        if group is None or group is not self._group:
            self.settle()
        arguments = named(jit, args, kwargs)
        watched = {name for name, value in arguments if value is not None and self.holes_in(value) is not None}
        try:
            # the budget counts the time spent following, not the compiles between launches
            deadline = time.thread_time() + max(0.0, self.budget_s - self.cpu_spent)
            reach = launch_reach(jit, args, kwargs, grid, kernel, watched, deadline)
        except Exception as exc:  # a construct the walk does not know: taken as writing everywhere
            name = getattr(jit, "__name__", "?")
            self._note(f"{name} was not followed ({type(exc).__name__}: {str(exc)[:120]})")
            for _, value in arguments:
                held = self.of(value)
                if held is not None:
                    held.everywhere = True
            return
        self.launches += 1
        if reach.note:
            self._note(f"{reach.kernel} was followed only in part: {reach.note}")
        shared = int(getattr(kernel.metadata, "shared", 0) or 0)
        if group is None:
            self._apply([reach])
        elif self.shared_memory_limit is None or shared <= self.shared_memory_limit:
            self._group = group  # a config the GPU cannot run is not one its autotuner picks
            self._configs.append(reach)

    def fail(self, exc: BaseException) -> None:
        """The check's own failure: said, and nothing more is followed (no gap is claimed)."""
        self.broken = True
        self.failed = self.failed or f"{type(exc).__name__}: {str(exc)[:200]}"

    def settle(self) -> None:
        """Apply an autotuned kernel's configs, once all of them were compiled."""
        if self._configs:
            self._apply(self._configs)
        self._group, self._configs = None, []

    def _apply(self, configs: list[Reach]) -> None:
        first = configs[0]
        written: dict[str, np.ndarray | None] = {}
        for name, tensor in first.tensors.items():
            if self.of(tensor) is None:
                continue
            reached = [c.writes.get(name, np.zeros((0, 2), np.int64)) for c in configs]
            if all(r is None for r in reached):
                written[name] = None
                continue
            known = [from_storage(tensor, r) for r in reached if r is not None]
            both = known[0]
            for other in known[1:]:
                both = intersect(both, other)
            if len(both):
                written[name] = both
        tainted = self._reads_holes(first, written)
        label = first.describe() + (f" ({len(configs)} configs)" if len(configs) > 1 else "")
        for name, spans in written.items():
            held = self.of(first.tensors[name])
            assert held is not None
            if label not in held.writers:
                held.writers.append(label)
            if tainted:
                held.unwrite(spans if spans is not None else np.array([[0, held.nbytes]], np.int64))
                if tainted not in held.derived:
                    held.derived.append(tainted)
            else:
                held.write(spans)

    def _reads_holes(self, reach: Reach, written: dict[str, np.ndarray | None]) -> str:
        """Why `reach`'s launch computes from elements never written, where it surely loads some ("" where not).
        What the launch writes itself counts as written (a program may read back what it stored)."""
        for name, spans in reach.reads.items():
            tensor = reach.tensors[name]
            found = self.holes_in(tensor)
            if found is None:
                continue
            held, holes = found
            own = written.get(name, np.zeros((0, 2), np.int64))
            if own is None:
                continue
            if len(intersect(subtract(holes, own), from_storage(tensor, spans))):
                return f"{reach.describe()} reads elements of a buffer that {writers(held)} never wrote"
        return ""

    def _note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    # ---- operators -----------------------------------------------------------------------------------------
    def operator(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> None:
        self.settle()
        name = func.overloadpacket.__name__
        if name in EMPTY:
            for t in tensors_in(out):
                self.made(t)
            return
        if func.is_view or name in SHAPE_ONLY:
            return
        schema = func._schema.arguments
        written: list[torch.Tensor] = []
        read: list[torch.Tensor] = []
        for position, argument in enumerate(schema):
            value = args[position] if position < len(args) and not argument.kwarg_only else kwargs.get(argument.name)
            tensors = tensors_in(value)
            writes = argument.alias_info is not None and argument.alias_info.is_write
            if writes:
                written.extend(tensors)
            if not writes or not (argument.kwarg_only or name in WRITE_ONLY):
                read.extend(tensors)
        holes = [(t, found) for t in read if (found := self.holes_in(t)) is not None]
        made = [t for t in tensors_in(out) if not any(t is w for w in written)]
        if not holes or name in SELECTIVE:
            for t in written:
                held = self.of(t)
                if held is not None and (spans := view_spans(t)) is not None:
                    held.write(spans)
            return
        source, (origin, gap) = holes[0]
        note = f"aten.{name} read {total(gap) // source.element_size():,} elements that {writers(origin)} never wrote"
        for t in written + made:
            if self.of(t) is None:
                self.made(t)
            held = self.of(t)
            assert held is not None
            held.write(view_spans(t))  # written, but where a hole maps to, with what came from the hole
            same_places = (
                mapped(source, gap, t)
                if torch.Tag.pointwise in func.tags or name in ("clone", "_to_copy", "copy_")
                else None
            )
            spans = same_places if same_places is not None else view_spans(t)
            if spans is not None:
                held.unwrite(spans)
            if note not in held.derived:
                held.derived.append(note)

    # ---- the outputs ---------------------------------------------------------------------------------------
    def report(self, out: Any) -> Coverage:
        """Whether every element of each output of the forward (`out`: a tensor, or a tuple or list of them) was
        written."""
        started = time.perf_counter()
        outputs = out if isinstance(out, list | tuple) else [out]
        gaps: list[CoverageGap] = []
        try:
            if not self.broken:
                self.settle()
                gaps = self._gaps(outputs)
        except Exception as exc:
            self.fail(exc)
            gaps = []
        self.spent += time.perf_counter() - started
        return Coverage(
            outputs=sum(isinstance(t, torch.Tensor) for t in outputs),
            launches=self.launches,
            gaps=gaps,
            notes=list(self.notes),
            seconds=round(self.spent, 3),
            failed=self.failed,
        )

    def _gaps(self, outputs: list[Any] | tuple[Any, ...]) -> list[CoverageGap]:
        gaps: list[CoverageGap] = []
        for position, t in enumerate(outputs):
            if not isinstance(t, torch.Tensor):
                continue
            found = self.holes_in(t)
            if found is None:
                if self.of(t) is not None and view_spans(t) is None:
                    self._note(f"output {position}'s elements lie too scattered in its buffer to be listed")
                continue
            held, holes = found
            size = t.element_size()
            gaps.append(
                CoverageGap(
                    output=position,
                    shape=list(t.shape),
                    missing=int(((holes[:, 1] + size - 1) // size - holes[:, 0] // size).sum()),
                    first=element_index(t, int(holes[0, 0])),
                    last=element_index(t, int(holes[-1, 1]) - 1),
                    writers=list(held.writers),
                    derived=list(held.derived),
                )
            )
        return gaps


class _Watch(TorchDispatchMode):
    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch wraps a mode's __torch_dispatch__ in torch._disable_dynamo unless told not to: its first call imports
        # torch._dynamo, about a second of CPU in every worker whose compile pass runs at the full sizes (no
        # torch.compile runs under this mode, which is what the wrapper is for)
        return False

    def __init__(self, recorder: CoverageRecorder) -> None:
        super().__init__()
        self.recorder = recorder

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if not self.recorder.broken:
            started, cpu_started = time.perf_counter(), time.thread_time()
            try:
                self.recorder.operator(func, args, kwargs, out)
            except Exception as exc:
                self.recorder.fail(exc)
            self.recorder.spent += time.perf_counter() - started
            self.recorder.cpu_spent += time.thread_time() - cpu_started
        return out
