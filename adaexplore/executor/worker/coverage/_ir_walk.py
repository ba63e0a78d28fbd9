"""Where a launch writes: its Triton IR walked for all of its programs at once, with the launch's integer arguments.

The walk follows what addresses and masks are made of (program ids, ranges, integer arguments, their arithmetic,
loops and branches) and nothing else: loads, floats and dots are unknown values it never computes, and a loop that
holds no store is not entered. Each store (an atomic, a TMA store) it meets is handed on as an `Access`: which
argument, at which byte offsets, under which mask, for the programs of the frame it was met in. What depends on
data is taken as widely as it can reach: a mask that depends on data is left out (every lane may store), an offset
that depends on data is unknown (anywhere in the argument), a loop whose bounds depend on data is walked once and
its stores count as reaching anywhere. So the accesses say where a launch *may* write: an element they leave out is
one the launch surely never writes. Loads are handed on the other way (`certain` accesses only, exact masks only),
where the caller watches an argument.

Values are held for many programs at once (`_ir_walk_values`); where a branch or a loop's trip count differs from
program to program, the programs taking each path are walked as a sub-frame.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from adaexplore.executor.worker.coverage._ir_walk_memory import MemoryOps
from adaexplore.executor.worker.coverage._ir_walk_ops import Access
from adaexplore.executor.worker.coverage._ir_walk_slice import LOADS, STORES, needed_values
from adaexplore.executor.worker.coverage._ir_walk_values import Bools, Frame, Ints, TooLarge, Value, merged, trip_pairs
from adaexplore.roofline import KernelIR

__all__ = ["Access", "OutOfTime", "walk_launch"]

# the most programs walked at once: arrays of one number per program stay under 8 MiB, and a walk past its deadline
# stops within one share
SHARE_CAP = 1 << 20
# operations walked whether or not a value they make is needed
_ALWAYS = STORES | {"tt.load", "tt.descriptor_load", "scf.for", "scf.if", "scf.while", "tt.call"}


class OutOfTime(Exception):
    """The walk passed its deadline."""


class _Walk(MemoryOps):
    def __init__(
        self,
        ir: KernelIR,
        sink: Callable[[Access], None],
        watch: frozenset[str],
        grid: tuple[int, int, int],
        deadline: float,
    ) -> None:
        super().__init__(sink, watch, grid)
        self.ir = ir
        self.deadline = deadline
        self.depth = 0
        self._interesting: dict[int, bool] = {}
        # the values the walk computes (None: all of them), see _ir_walk_slice
        self.needed: set[str] | None = None

    # ---- walking -------------------------------------------------------------------------------------------
    def interesting(self, ops: Iterable[Any]) -> bool:
        """Whether these ops (nested regions and called functions included) store, or load from a watched
        argument."""
        for op in ops:
            key = id(op)
            if key not in self._interesting:
                found = op.name in STORES or (
                    op.name in LOADS
                    and bool(self.watch)
                    and (self.needed is None or (op.operands()[:1] and op.operands()[0] in self.needed))
                )
                if not found and op.name == "tt.call":
                    target = re.search(r"@([\w.$-]+)", op.text)
                    fn = self.ir.functions.get(target.group(1)) if target else None
                    found = fn is not None and self.depth < 8 and self.interesting(fn.body)
                if not found:
                    found = any(self.interesting(region) for region in op.regions)
                self._interesting[key] = found
            if self._interesting[key]:
                return True
        return False

    def region(self, ops: list[Any]) -> list[str]:
        for op in ops:
            if op.name in ("scf.yield", "scf.condition", "tt.return"):
                operands = op.operands()
                return operands[1:] if op.name == "scf.condition" else operands
            if time.thread_time() > self.deadline:
                raise OutOfTime()
            self.op(op)
        return []

    def op(self, op: Any) -> None:
        name = op.name
        results = op.results
        if self.needed is not None and name not in _ALWAYS and not any(r in self.needed for r in results):
            for result in results:
                self.set(result, None)
            return
        if name == "arith.constant":
            self._constant(op)
            return
        if name in ("tt.get_program_id", "tt.get_num_programs"):
            axis = "xyz".index(op.text.split()[0][0]) if op.text.split() else 0
            assert self.frame is not None
            if name == "tt.get_program_id":
                self.set(results[0], Ints((), [self.frame.pids[axis].reshape(-1)]))
            else:
                self.set(results[0], Ints.const(self.grid[axis]))
            return
        if name.startswith("arith."):
            self._arith(op)
            return
        handler = _HANDLERS.get(name)
        if handler is not None:
            handler(self, op)
            return
        for result in results:
            self.set(result, None)

    # ---- control flow --------------------------------------------------------------------------------------
    def _for(self, op: Any) -> None:
        match = re.match(r"(%[\w.$-]+)\s*=\s*(%[\w.$#-]+)\s+to\s+(%[\w.$#-]+)\s+step\s+(%[\w.$#-]+)", op.text)
        carried = re.search(r"iter_args\((.*?)\)\s*->", op.text) or re.search(r"iter_args\((.*)\)", op.text)
        pairs = re.findall(r"(%[\w.$-]+)\s*=\s*(%[\w.$#-]+)", carried.group(1)) if carried else []
        names, inits = [p[0] for p in pairs], [p[1] for p in pairs]
        body = op.regions[0] if op.regions else []
        if match is None or not self.interesting(body):
            for result in op.results:
                self.set(result, None)
            return
        iv, lb, ub, step = match.groups()
        low, high, stride = (self.scalar(self.get(x)) for x in (lb, ub, step))
        values = [self.get(i) for i in inits]
        if low is None or high is None or stride is None or not np.all(stride > 0):
            # bounds that depend on data: the body once, its stores reaching anywhere, its loads not watched
            certain, self.certain = self.certain, False
            self.set(iv, None)
            for name in names:
                self.set(name, None)
            self.region(body)
            self.certain = certain
            for result in op.results:
                self.set(result, None)
            return
        trips = np.maximum(0, -((low - high) // stride))
        if self.needed is not None and not any(name in self.needed for name in names):
            self._at_once(body, iv, names, low, stride, trips)
            for result in op.results:
                self.set(result, None)
            return
        values = self._trip_by_trip(body, iv, names, values, low, stride, trips)
        for result, value in zip(op.results, values + [None] * len(op.results), strict=False):
            self.set(result, value)

    def _at_once(
        self, body: list[Any], iv: str, names: list[str], low: np.ndarray, stride: np.ndarray, trips: np.ndarray
    ) -> None:
        """A loop none of whose carried values is needed: every trip of every program walked at once, each (program,
        trip) a program of a sub-frame."""
        frame = self.frame
        assert frame is not None
        counts = np.broadcast_to(trips, (frame.size,)).astype(np.int64)
        for rows, k in trip_pairs(counts, SHARE_CAP):
            if time.thread_time() > self.deadline:
                raise OutOfTime()
            self.frame = frame.sub(rows)
            start = low if low.shape[0] == 1 else low[rows]
            self.set(iv, Ints((), [start + k * (stride if stride.shape[0] == 1 else stride[rows])]))
            for name in names:
                self.set(name, None)
            self.region(body)
            self.frame = frame

    def _trip_by_trip(
        self,
        body: list[Any],
        iv: str,
        names: list[str],
        values: list[Value],
        low: np.ndarray,
        stride: np.ndarray,
        trips: np.ndarray,
    ) -> list[Value]:
        """A loop that carries a needed value: one trip after another, for the programs still in it; the values
        carried out of its last trip."""
        frame = self.frame
        assert frame is not None
        for k in range(int(trips.max()) if trips.size else 0):
            active = trips > k
            sub = frame if bool(active.all()) else frame.sub(np.nonzero(np.broadcast_to(active, (frame.size,)))[0])
            self.frame = sub
            rows = sub.rows_in(frame) if sub is not frame else None
            at: np.ndarray = (low + k * stride).reshape(-1)
            self.set(iv, Ints((), [at if rows is None or at.shape[0] == 1 else at[rows]]))
            for name, value in zip(names, values, strict=False):
                self.set(name, value.restricted(rows) if rows is not None and value is not None else value)
            yielded = [self.get(y) for y in self.region(body)]
            self.frame = frame
            values = (
                yielded
                if rows is None
                else [merged(old, new, rows, frame.size) for old, new in zip(values, yielded, strict=False)]
            )
        return values

    def _if(self, op: Any) -> None:
        condition = self.get(op.operands()[0]) if op.operands() else None
        branches = op.regions
        frame = self.frame
        assert frame is not None
        if not isinstance(condition, Bools) or not condition.exact or condition.shape:
            if not any(self.interesting(b) for b in branches):
                for result in op.results:
                    self.set(result, None)
                return
            certain, self.certain = self.certain, False
            for branch in branches:
                self.region(branch)
            self.certain = certain
            for result in op.results:
                self.set(result, None)
            return
        taken = np.broadcast_to(condition.dense().reshape(-1), (frame.size,))
        outs: list[tuple[np.ndarray, list[Value]]] = []
        for index, branch in enumerate(branches[:2]):
            which = taken if index == 0 else ~taken
            if not which.any():
                continue
            if which.all():
                outs.append((np.arange(frame.size), [self.get(y) for y in self.region(branch)]))
                continue
            rows = np.nonzero(which)[0]
            self.frame = frame.sub(rows)
            outs.append((rows, [self.get(y) for y in self.region(branch)]))
            self.frame = frame
        if len(outs) == 1 and len(outs[0][0]) == frame.size:
            values = outs[0][1]
        elif len(outs) == 2:
            values = [
                merged(merged(None, a, outs[0][0], frame.size, fill=True), b, outs[1][0], frame.size)
                for a, b in zip(outs[0][1], outs[1][1], strict=False)
            ]
        else:
            values = []
        for result, value in zip(op.results, values + [None] * len(op.results), strict=False):
            self.set(result, value)

    def _while(self, op: Any) -> None:
        if any(self.interesting(r) for r in op.regions):
            certain, self.certain = self.certain, False
            for names in op.block_args:
                for name in names:
                    self.set("%" + name, None)
            for region in op.regions:
                self.region(region)
            self.certain = certain
        for result in op.results:
            self.set(result, None)

    def _call(self, op: Any) -> None:
        target = re.search(r"@([\w.$-]+)", op.text)
        fn = self.ir.functions.get(target.group(1)) if target else None
        returned: list[Value] = []
        if fn is not None and self.depth < 8 and self.interesting(fn.body):
            self.depth += 1
            needed, self.needed = self.needed, None  # a called function is walked whole
            try:
                for arg, operand in zip(fn.args, op.operands(), strict=False):
                    self.set("%" + arg, self.get(operand))
                returned = [self.get(r) for r in self.region(fn.body)]
            finally:
                self.depth -= 1
                self.needed = needed
        for result, value in zip(op.results, returned + [None] * len(op.results), strict=False):
            self.set(result, value)


_HANDLERS: dict[str, Callable[[_Walk, Any], None]] = {
    "tt.splat": _Walk._splat,
    "tt.make_range": _Walk._make_range,
    "tt.expand_dims": _Walk._expand_dims,
    "tt.broadcast": _Walk._broadcast,
    "tt.reshape": _Walk._reshape_op,
    "tt.trans": _Walk._trans,
    "tt.addptr": _Walk._addptr,
    "tt.bitcast": _Walk._bitcast,
    "tt.int_to_ptr": _Walk._int_to_ptr,
    "tt.store": _Walk._store,
    "tt.load": _Walk._load,
    "tt.atomic_rmw": _Walk._atomic,
    "tt.atomic_cas": _Walk._atomic,
    "tt.make_tensor_descriptor": _Walk._make_descriptor,
    "tt.descriptor_store": _Walk._descriptor_store,
    "tt.descriptor_reduce": _Walk._descriptor_store,
    "tt.descriptor_scatter": _Walk._descriptor_store,
    "scf.for": _Walk._for,
    "scf.if": _Walk._if,
    "scf.while": _Walk._while,
    "tt.call": _Walk._call,
}


def walk_launch(
    ir: KernelIR,
    args: dict[str, Value],
    grid: tuple[int, int, int],
    sink: Callable[[list[Access]], None],
    *,
    watch: frozenset[str] = frozenset(),
    deadline: float,
) -> None:
    """Walk every program of a launch of `ir` over `grid`, handing `sink` the accesses of each share of the
    programs walked together (all of them, unless the walk's arrays would grow too large: then fewer at a time).
    `args` gives the values of the kernel's parameters by name (integers as `Ints`, tensors as `Ptr` at offset 0,
    descriptors as `Desc`; a parameter missing is unknown).

    Raises:
        OutOfTime: the deadline passed.
        TooLarge: a single program's arrays are too large to walk.
    """
    fn = ir.functions[ir.entry]
    key = (id(fn), watch)
    if key not in _NEEDED:
        _NEEDED[key] = needed_values(fn.body, watch)
    gx, gy, gz = (max(0, int(g)) for g in grid)
    programs = gx * gy * gz
    share = min(programs, SHARE_CAP)
    start = 0
    while start < programs:
        if time.thread_time() > deadline:
            raise OutOfTime()
        stop = min(programs, start + share)
        linear = np.arange(start, stop, dtype=np.int64)
        found: list[Access] = []
        walk = _Walk(ir, found.append, watch, (gx, gy, gz), deadline)
        walk.needed = _NEEDED[key]
        walk.frame = Frame((linear % gx, (linear // gx) % gy, linear // (gx * gy)))
        for name in fn.args:
            walk.set("%" + name, args.get(name))
        try:
            walk.region(fn.body)
            sink(found)
        except TooLarge:
            if share == 1:
                raise
            share = max(1, share // 8)
            continue
        start = stop


# the values each function's walk needs, by the function (parsed IR is kept, so its identity stays) and the
# arguments whose loads are watched
_NEEDED: dict[tuple[int, frozenset[str]], set[str]] = {}
