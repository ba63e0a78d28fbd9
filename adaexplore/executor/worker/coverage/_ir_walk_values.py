"""The values a walk of a kernel's Triton IR computes for many programs at once (see `_ir_walk`).

Every value is held for the programs of a frame at once: its arrays have the programs as their first axis (of
length 1 where the value is the same for all of them) and the block's axes after it (of length 1 where the value
does not vary along that axis). An integer is a sum of such arrays, kept apart as long as they vary along different
axes, so that `rows[:, None] * stride + cols[None, :]` over a 128x128 tile costs 256 numbers per program, not 16384.
A mask is a conjunction of parts, each a boolean array or a comparison not yet made (`Compare`), which the walk
resolves per axis (a lane range per program) without ever building the tile. A pointer is the kernel argument it
comes from and its offset in bytes. Nothing is known of data: a loaded value, a float, a dot is `None`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "TENSOR",
    "Bools",
    "Compare",
    "Desc",
    "Frame",
    "Ints",
    "Ptr",
    "TooLarge",
    "Value",
    "dense_size_check",
    "elem_bytes",
    "is_int",
    "merged",
    "restrict",
    "result_type",
    "split_types",
    "trip_pairs",
    "type_shape",
]

TENSOR = re.compile(r"tensor<([^>]*(?:<[^>]*>)?[^>]*)>")
_BYTES = {"f64": 8, "i64": 8, "f32": 4, "i32": 4, "f16": 2, "bf16": 2, "i16": 2, "i8": 1, "i1": 1}

# the most numbers one array of a walk may hold before the walk is split over fewer programs at a time
DENSE_CAP = 1 << 23


class TooLarge(Exception):
    """An array of the walk would hold more than DENSE_CAP numbers: walk fewer programs at a time."""


def dense_size_check(shape: tuple[int, ...]) -> None:
    if int(np.prod(shape, dtype=np.int64)) > DENSE_CAP:
        raise TooLarge(shape)


class Frame:
    """Programs walked together: the root frame holds a launch's programs (or a share of them); a branch or a loop
    whose path differs from program to program walks a sub-frame of the programs that take it."""

    def __init__(
        self,
        pids: tuple[np.ndarray, np.ndarray, np.ndarray],
        parent: Frame | None = None,
        take: np.ndarray | None = None,
    ) -> None:
        self.pids = pids
        self.size = int(pids[0].shape[0])
        self.parent = parent
        self.take = take  # the rows of the parent frame this frame's programs are
        self.cache: dict[str, object] = {}

    def sub(self, take: np.ndarray) -> Frame:
        x, y, z = self.pids
        return Frame((x[take], y[take], z[take]), self, take)

    def rows_in(self, ancestor: Frame) -> np.ndarray:
        """The rows of `ancestor` that this frame's programs are."""
        frame: Frame = self
        rows = np.arange(self.size)
        while frame is not ancestor:
            assert frame.parent is not None and frame.take is not None, "not an ancestor"
            rows = frame.take[rows]
            frame = frame.parent
        return rows


def _take(array: np.ndarray, rows: np.ndarray) -> np.ndarray:
    return array if array.shape[0] == 1 else array[rows]


@dataclass
class Ints:
    """An integer (block or scalar): the sum of `parts`, each of shape (programs or 1, *block axes or 1)."""

    shape: tuple[int, ...]
    parts: list[np.ndarray]

    @staticmethod
    def const(value: int, shape: tuple[int, ...] = ()) -> Ints:
        return Ints(shape, [np.full((1,) * (1 + len(shape)), value, dtype=np.int64)])

    def dense(self) -> np.ndarray:
        if not self.parts:
            return np.zeros((1,) * (1 + len(self.shape)), dtype=np.int64)
        dense_size_check(np.broadcast_shapes(*(p.shape for p in self.parts)))
        return functools.reduce(np.add, self.parts)

    def uniform_block(self) -> bool:
        """The same for every lane of the block (a scalar splat)."""
        return all(all(n == 1 for n in p.shape[1:]) for p in self.parts)

    def scaled(self, factor: np.ndarray) -> Ints:
        return Ints(self.shape, [p * factor for p in self.parts])

    def negated(self) -> Ints:
        return Ints(self.shape, [-p for p in self.parts])

    def plus(self, other: Ints) -> Ints:
        merged: dict[tuple[int, ...], np.ndarray] = {}
        for part in self.parts + other.parts:
            # parts that vary along the same axes are added at once (a part along no axis joins any)
            key = tuple(n > 1 for n in part.shape[1:])
            merged[key] = merged[key] + part if key in merged else part
        return Ints(self.shape, list(merged.values()))

    def restricted(self, rows: np.ndarray) -> Ints:
        return Ints(self.shape, [_take(p, rows) for p in self.parts])

    def reshaped(self, fn: Callable[[np.ndarray], np.ndarray]) -> Ints:
        return Ints(self.shape, [fn(p) for p in self.parts])


@dataclass
class Compare:
    """`diff <pred> 0`, not yet evaluated: `pred` one of lt, le, gt, ge, eq, ne (signed or not alike)."""

    pred: str
    diff: Ints

    def dense(self) -> np.ndarray:
        values = self.diff.dense()
        return {
            "lt": values < 0,
            "le": values <= 0,
            "gt": values > 0,
            "ge": values >= 0,
            "eq": values == 0,
            "ne": values != 0,
        }[self.pred]

    def axes(self) -> tuple[int, ...]:
        return tuple(sorted({i for p in self.diff.parts for i, n in enumerate(p.shape[1:]) if n > 1}))

    def restricted(self, rows: np.ndarray) -> Compare:
        return Compare(self.pred, self.diff.restricted(rows))


Part = np.ndarray | Compare


def _part_axes(part: Part) -> tuple[int, ...]:
    if isinstance(part, Compare):
        return part.axes()
    return tuple(i for i, n in enumerate(part.shape[1:]) if n > 1)


@dataclass
class Bools:
    """A boolean (block or scalar): the conjunction of `parts`. Where `exact` is False it is an upper bound: some
    conjunct depended on data and was left out (true where the value is true, maybe also elsewhere), which is what a
    store's mask may be taken as when what matters is where the store may write."""

    shape: tuple[int, ...]
    parts: list[Part] = field(default_factory=list)
    exact: bool = True

    def dense(self) -> np.ndarray:
        if not self.parts:
            return np.ones((1,) * (1 + len(self.shape)), dtype=bool)
        arrays = [p.dense() if isinstance(p, Compare) else p for p in self.parts]
        dense_size_check(np.broadcast_shapes(*(a.shape for a in arrays)))
        return functools.reduce(np.logical_and, arrays)

    def restricted(self, rows: np.ndarray) -> Bools:
        return Bools(
            self.shape,
            [p.restricted(rows) if isinstance(p, Compare) else _take(p, rows) for p in self.parts],
            self.exact,
        )

    def reshaped(self, fn: Callable[[np.ndarray], np.ndarray]) -> Bools:
        return Bools(
            self.shape,
            [Compare(p.pred, p.diff.reshaped(fn)) if isinstance(p, Compare) else fn(p) for p in self.parts],
            self.exact,
        )

    @staticmethod
    def axes_of(part: Part) -> tuple[int, ...]:
        return _part_axes(part)


@dataclass
class Ptr:
    """A pointer (block or scalar) into kernel argument(s) `origin` (None: from data, anywhere), at `offset` bytes
    from where the argument points (None: unknown); `elem` bytes per element of what it points to."""

    shape: tuple[int, ...]
    origin: frozenset[str] | None
    elem: int
    offset: Ints | None

    def restricted(self, rows: np.ndarray) -> Ptr:
        return Ptr(self.shape, self.origin, self.elem, self.offset.restricted(rows) if self.offset else None)


@dataclass
class Desc:
    """A tensor descriptor (TMA): the argument it addresses, its base offset in bytes, its shape and strides (in
    elements, per dimension; None where unknown) and its block shape."""

    origin: frozenset[str] | None
    elem: int
    base: Ints | None
    dims: list[Ints | None]
    strides: list[Ints | None]
    block: tuple[int, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return ()

    def restricted(self, rows: np.ndarray) -> Desc:
        def r(v: Ints | None) -> Ints | None:
            return v.restricted(rows) if v is not None else None

        return Desc(
            self.origin, self.elem, r(self.base), [r(d) for d in self.dims], [r(s) for s in self.strides], self.block
        )


Value = Ints | Bools | Ptr | Desc | None


def restrict(value: Value, rows: np.ndarray) -> Value:
    """`value` for the programs at `rows` of its frame."""
    return None if value is None else value.restricted(rows)


# ---- the types the IR writes ---------------------------------------------------------------------------
def type_shape(type_text: str) -> tuple[int, ...]:
    found = TENSOR.search(type_text)
    if not found:
        return ()
    dims = []
    for part in found.group(1).split("x"):
        if not part.strip().isdigit():
            break
        dims.append(int(part))
    return tuple(dims)


def elem_bytes(type_text: str) -> int:
    """Bytes per element of a pointer's (or tensor's) element type."""
    ptr = re.search(r"!tt\.ptr<(\w+)", type_text)
    element = ptr.group(1) if ptr else type_text.strip()
    if ptr is None:
        found = TENSOR.search(type_text)
        if found:
            element = found.group(1).split("x")[-1]
    element = element.strip().rstrip(">").strip()
    if element.startswith(("f8", "f6", "f4")):
        return 1
    return _BYTES.get(element, 4)


def split_types(text: str) -> tuple[str, str]:
    depth = 0
    for i, ch in enumerate(text):
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        elif ch == ":" and depth == 0 and text[i - 1 : i] == " " and text[i + 1 : i + 2] == " ":
            return text[:i], text[i + 1 :]
    return text, ""


def result_type(op: Any) -> str:
    types = op.types()
    return types.split("->")[-1] if "->" in types else types


def is_int(type_text: str) -> bool:
    element = TENSOR.search(type_text)
    text = element.group(1).split("x")[-1] if element else type_text.strip()
    return bool(re.fullmatch(r"(i\d+|index)", text.strip()))


# ---- frames ------------------------------------------------------------------------------------------
def trip_pairs(counts: np.ndarray, cap: int) -> Iterable[tuple[np.ndarray, np.ndarray]]:
    """The (program row, trip) pairs of a loop that makes `counts[i]` trips in the frame's row i, in shares of about
    `cap` pairs, each program's trips in turn (their stores then often follow each other in memory)."""
    programs = counts.size
    if programs and bool((counts == counts[0]).all()):
        trips = int(counts[0])
        per = max(1, cap // programs)
        for first in range(0, trips, per):
            taken = min(per, trips - first)
            yield np.repeat(np.arange(programs), taken), np.tile(np.arange(first, first + taken), programs)
        return
    ends = np.cumsum(counts)
    start = 0
    while start < programs:
        before = int(ends[start - 1]) if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, before + cap, side="right")))
        share = counts[start:stop]
        rows = np.repeat(np.arange(start, stop), share)
        yield rows, np.arange(len(rows)) - np.repeat(np.cumsum(share) - share, share)
        start = stop


def merged(old: Value, new: Value, rows: np.ndarray, size: int, fill: bool = False) -> Value:
    """`old` (for every program of a frame of `size`) with `new` at `rows` (values of a sub-frame's programs)."""
    if new is None or (old is None and not fill):
        return None
    if isinstance(new, Ints) and (fill or isinstance(old, Ints)):
        fresh = new.dense()
        base = old.dense() if isinstance(old, Ints) else np.zeros((1, *fresh.shape[1:]), np.int64)
        shape = np.broadcast_shapes(base.shape[1:], fresh.shape[1:])
        out = np.array(np.broadcast_to(base, (size, *shape)))
        out[rows] = np.broadcast_to(fresh, (len(rows), *shape))
        return Ints(new.shape, [out])
    if isinstance(new, Bools) and new.exact and (fill or (isinstance(old, Bools) and old.exact)):
        fresh = new.dense()
        base = old.dense() if isinstance(old, Bools) else np.ones((1, *fresh.shape[1:]), bool)
        shape = np.broadcast_shapes(base.shape[1:], fresh.shape[1:])
        out = np.array(np.broadcast_to(base, (size, *shape)))
        out[rows] = np.broadcast_to(fresh, (len(rows), *shape))
        return Bools(new.shape, [out])
    if isinstance(new, Ptr) and (fill or isinstance(old, Ptr)):
        origin = (
            new.origin
            if not isinstance(old, Ptr)
            else (None if old.origin is None or new.origin is None else old.origin | new.origin)
        )
        offset = merged(old.offset if isinstance(old, Ptr) else None, new.offset, rows, size, fill)
        return Ptr(new.shape, origin, new.elem, offset if isinstance(offset, Ints) else None)
    return None
