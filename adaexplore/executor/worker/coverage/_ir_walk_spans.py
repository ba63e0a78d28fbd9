"""The bytes an access reaches, as sorted, disjoint [start, end) ranges, and the algebra of such ranges.

An access's offsets are a sum of parts that each vary along some of the block's axes (`_ir_walk_values`). The
axes fall into groups that vary together (in one part of the offset or of the mask); the bytes reached are then
every sum of one value per group. One group is kept as runs of consecutive bytes (the one with the longest runs: a
tile's row), the others are listed value by value, so a 128x128 tile of a row-major matrix is 128 ranges, not 16384
elements. A group along one axis whose offsets are the same for every program, masked by comparisons of that axis's
index with per-program bounds (`offs < n`), is resolved without listing its lanes: a lane range per program. Where
every listed group is of that kind, programs with the same lane ranges are taken together: their runs are merged
first (a row of tiles makes one range), then added to the listed offsets, so a 1-D block over a flat output, or a
GEMM's tiles over its output, come to a handful of ranges however many programs there are.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from adaexplore.executor.worker.coverage._ir_walk import Access
from adaexplore.executor.worker.coverage._ir_walk_values import Bools, Compare, TooLarge, dense_size_check

__all__ = ["SPAN_CAP", "access_spans", "intersect", "merge", "subtract", "total"]

# the most ranges one access may list before the walk is split over fewer programs at a time
SPAN_CAP = 1 << 22
_BIG = np.iinfo(np.int64).max


def merge(spans: np.ndarray) -> np.ndarray:
    """Sorted, disjoint ranges covering the same bytes as `spans` ((n, 2) starts and ends)."""
    if len(spans) == 0:
        return np.zeros((0, 2), np.int64)
    spans = spans[np.argsort(spans[:, 0], kind="stable")]
    starts, ends = spans[:, 0], np.maximum.accumulate(spans[:, 1])
    # a range starts anew where it begins after everything before it ended
    fresh = np.ones(len(spans), bool)
    fresh[1:] = starts[1:] > ends[:-1]
    first = np.nonzero(fresh)[0]
    last = np.append(first[1:] - 1, len(spans) - 1)
    out = np.stack([starts[first], ends[last]], axis=1)
    return out[out[:, 1] > out[:, 0]]


def intersect(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The bytes in both (each sorted and disjoint)."""
    if len(a) == 0 or len(b) == 0:
        return np.zeros((0, 2), np.int64)
    points = np.unique(np.concatenate([a.ravel(), b.ravel()]))
    cells = np.stack([points[:-1], points[1:]], axis=1)
    inside = _covered(cells[:, 0], a) & _covered(cells[:, 0], b)
    return merge(cells[inside])


def subtract(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The bytes in `a` and not in `b` (each sorted and disjoint)."""
    if len(a) == 0 or len(b) == 0:
        return a
    points = np.unique(np.concatenate([a.ravel(), b.ravel()]))
    cells = np.stack([points[:-1], points[1:]], axis=1)
    inside = _covered(cells[:, 0], a) & ~_covered(cells[:, 0], b)
    return merge(cells[inside])


def total(spans: np.ndarray) -> int:
    return int((spans[:, 1] - spans[:, 0]).sum()) if len(spans) else 0


def _covered(points: np.ndarray, spans: np.ndarray) -> np.ndarray:
    at = np.searchsorted(spans[:, 0], points, side="right") - 1
    ok = at >= 0
    return ok & (points < np.where(ok, spans[np.maximum(at, 0), 1], 0))


def _groups(rank: int, axes_lists: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    parent = list(range(rank))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    used: set[int] = set()
    for axes in axes_lists:
        used.update(axes)
        for a, b in itertools.pairwise(axes):
            parent[find(a)] = find(b)
    found: dict[int, list[int]] = {}
    for axis in sorted(used):
        found.setdefault(find(axis), []).append(axis)
    return [tuple(v) for v in found.values()]


def _squeeze(array: np.ndarray, group: tuple[int, ...]) -> np.ndarray:
    """A part varying only along `group`'s axes as (programs or 1, lanes of the group flattened)."""
    kept = array.reshape(array.shape[:1] + tuple(array.shape[1 + d] for d in group))
    return kept


class _Group:
    """One group of axes: its offsets and mask per program, as a lane range or listed."""

    def __init__(
        self,
        group: tuple[int, ...],
        shape: tuple[int, ...],
        offsets: list[np.ndarray],
        masks: list[np.ndarray | Compare],
        elem: int,
    ) -> None:
        self.dims = tuple(shape[d] for d in group)
        self.lanes = int(np.prod(self.dims))
        self.elem = elem
        self.lo: np.ndarray | None = None  # a lane range per program, where the fast path holds
        self.hi: np.ndarray | None = None
        # on the fast path: the offsets of the lanes, the same for every program, and whether they step by one
        # element
        self.along = np.zeros(0, np.int64)
        self.contiguous = False
        self._runs: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        full = (1, *self.dims)
        squeezed = [np.broadcast_to(_squeeze(p, group), (p.shape[0], *self.dims)) for p in offsets]
        if len(group) == 1 and all(p.shape[0] == 1 for p in squeezed) and self._fast(squeezed, masks, group):
            return
        values = functools.reduce(np.add, squeezed) if squeezed else np.zeros(full, np.int64)
        arrays = []
        for m in masks:
            dense = m.dense() if isinstance(m, Compare) else m
            arrays.append(_squeeze(dense, group))
        mask = functools.reduce(np.logical_and, arrays) if arrays else np.ones(full, bool)
        programs = max(values.shape[0], mask.shape[0])
        dense_size_check((programs, self.lanes))
        self.values = np.broadcast_to(values, (programs, *self.dims)).reshape(programs, self.lanes)
        self.mask = np.broadcast_to(mask, (programs, *self.dims)).reshape(programs, self.lanes)

    def _fast(self, offsets: list[np.ndarray], masks: list[np.ndarray | Compare], group: tuple[int, ...]) -> bool:
        """One axis, the same offsets for every program, masks that bound the lane index per program: a lane range
        per program (`lo`, `hi`), and the offsets of the lanes (`along`)."""
        values = functools.reduce(np.add, offsets).reshape(-1) if offsets else np.zeros(self.lanes, np.int64)
        n = self.lanes
        lo = np.zeros(1, np.int64)
        hi = np.full(1, n, np.int64)
        for m in masks:
            if not isinstance(m, Compare):
                if m.shape[0] != 1:
                    return False
                allowed = _squeeze(m, group).reshape(-1)
                inside = np.nonzero(allowed)[0]
                if len(inside) == 0:
                    lo, hi = lo, np.minimum(hi, lo)
                    continue
                if inside[-1] - inside[0] + 1 != len(inside):
                    return False
                lo, hi = np.maximum(lo, inside[0]), np.minimum(hi, inside[-1] + 1)
                continue
            bound = _lane_bound(m, group, n)
            if bound is None:
                return False
            lo, hi = np.maximum(lo, bound[0]), np.minimum(hi, bound[1])
        self.lo, self.hi = np.broadcast_arrays(lo, np.maximum(hi, lo))
        self.along = values
        self.contiguous = n <= 1 or bool(np.all(np.diff(values) == self.elem))
        return True

    def listed(self) -> tuple[np.ndarray, np.ndarray]:
        """(values, mask), each (programs or 1, lanes)."""
        if self.lo is None:
            return self.values, self.mask
        lanes = np.arange(self.lanes, dtype=np.int64)
        assert self.hi is not None
        mask = (lanes[None, :] >= self.lo[:, None]) & (lanes[None, :] < self.hi[:, None])
        return self.along.reshape(1, -1), mask

    def runs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Its bytes as runs: (program of each run, start, end), the program 0 where the group is the same for
        all."""
        if self.lo is not None and self.contiguous:
            assert self.hi is not None
            programs = np.arange(len(self.lo))
            keep = self.hi > self.lo
            start = int(self.along[0]) if len(self.along) else 0
            return programs[keep], start + self.lo[keep] * self.elem, start + self.hi[keep] * self.elem
        if self.lo is not None:  # every lane its own run
            values, mask = self.listed()
            rows, cols = np.nonzero(np.broadcast_to(mask, (len(self.lo), self.lanes)))
            return rows, self.along[cols], self.along[cols] + self.elem
        if self._runs is not None:
            return self._runs
        values = np.where(self.mask, self.values, _BIG)
        if values.shape[1] > 1 and not bool((np.diff(values, axis=1) >= 0).all()):
            values = np.sort(values, axis=1)
        valid = values != _BIG
        step = np.diff(values, axis=1)
        begins = valid.copy()
        begins[:, 1:] &= (step != self.elem) & (step != 0)
        ends = valid.copy()
        ends[:, :-1] &= ~(valid[:, 1:] & ((step == self.elem) | (step == 0)))
        rows, cols = np.nonzero(begins)
        end_rows, end_cols = np.nonzero(ends)
        self._runs = (rows, values[rows, cols], values[end_rows, end_cols] + self.elem)
        return self._runs

    def length(self) -> float:
        """The mean length of its runs, in lanes, judged on a few programs: which group is kept as runs."""
        if self.lo is not None:
            return float(self.lanes) if self.contiguous else 1.0
        rows = np.unique(np.linspace(0, len(self.values) - 1, num=min(len(self.values), 16)).astype(np.int64))
        values = np.sort(np.where(self.mask[rows] if len(self.mask) > 1 else self.mask, self.values[rows], _BIG), 1)
        valid = values != _BIG
        step = np.diff(values, axis=1)
        begins = valid.copy()
        begins[:, 1:] &= (step != self.elem) & (step != 0)
        return float(valid.sum()) / max(1, int(begins.sum()))


def _lane_bound(compare: Compare, group: tuple[int, ...], n: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The lanes [lo, hi) per program where `compare` holds, when it is a per-program number against offsets the
    same for every program and monotonic along the lane."""
    lanes_parts = [p for p in compare.diff.parts if any(s > 1 for s in p.shape[1:])]
    scalar_parts = [p for p in compare.diff.parts if not any(s > 1 for s in p.shape[1:])]
    if any(p.shape[0] != 1 for p in lanes_parts):
        return None
    along = (
        functools.reduce(np.add, [np.broadcast_to(_squeeze(p, group), (1, n)) for p in lanes_parts]).reshape(-1)
        if lanes_parts
        else np.zeros(n, np.int64)
    )
    shift = functools.reduce(np.add, [p.reshape(p.shape[0]) for p in scalar_parts]) if scalar_parts else np.zeros(1)
    shift = np.asarray(shift, dtype=np.int64).reshape(-1)
    pred = compare.pred
    steps = np.diff(along)
    if n > 1 and np.all(steps < 0):
        along, shift, pred = -along, -shift, {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}.get(pred, pred)
    elif n > 1 and not np.all(steps > 0):
        return None
    # along[i] + shift pred 0, along increasing
    threshold = -shift
    if pred == "lt":
        return np.zeros_like(threshold), np.searchsorted(along, threshold, side="left")
    if pred == "le":
        return np.zeros_like(threshold), np.searchsorted(along, threshold, side="right")
    if pred == "gt":
        return np.searchsorted(along, threshold, side="right"), np.full_like(threshold, n)
    if pred == "ge":
        return np.searchsorted(along, threshold, side="left"), np.full_like(threshold, n)
    return None


def access_spans(access: Access) -> np.ndarray | None:
    """The bytes `access` may reach from where its argument points, sorted and disjoint; None: anywhere.

    Raises:
        TooLarge: listing them would take more than SPAN_CAP ranges (or an array over DENSE_CAP numbers).
    """
    if access.offset is None:
        return None
    shape = access.shape
    rank = len(shape)
    mask = access.mask if access.mask is not None else Bools(shape)
    offset_axes = [tuple(i for i, s in enumerate(p.shape[1:]) if s > 1) for p in access.offset.parts]
    mask_axes = [Bools.axes_of(p) for p in mask.parts]
    groups = _groups(rank, offset_axes + mask_axes)
    scalar = [p.reshape(p.shape[0]) for p, axes in zip(access.offset.parts, offset_axes, strict=False) if not axes]
    base = functools.reduce(np.add, scalar) if scalar else np.zeros(1, np.int64)
    alive_parts = [
        (p.dense() if isinstance(p, Compare) else p).reshape(-1)
        for p, axes in zip(mask.parts, mask_axes, strict=False)
        if not axes
    ]
    alive = functools.reduce(np.logical_and, alive_parts) if alive_parts else np.ones(1, bool)
    made = []
    for group in groups:
        offsets = [
            p for p, axes in zip(access.offset.parts, offset_axes, strict=False) if axes and set(axes) <= set(group)
        ]
        masks = [p for p, axes in zip(mask.parts, mask_axes, strict=False) if axes and set(axes) <= set(group)]
        made.append(_Group(group, shape, offsets, masks, access.elem))
    programs = max([base.shape[0], alive.shape[0]] + [_programs(g) for g in made])
    base = np.broadcast_to(base, (programs,))
    alive = np.broadcast_to(alive, (programs,))
    if not made:
        spans = np.stack([base, base + access.elem], axis=1)[alive]
        return merge(spans)
    fast = max(range(len(made)), key=lambda i: made[i].length())
    keyed = _by_lane_ranges(made, fast, base, alive, programs)
    if keyed is not None:
        return keyed
    # every sum of one value of each other group, per program
    listed = base.reshape(-1, 1)
    listed_mask = alive.reshape(-1, 1)
    for i, other in enumerate(made):
        if i == fast:
            continue
        values, keep = other.listed()
        dense_size_check((programs, listed.shape[1] * values.shape[1]))
        listed = (listed[:, :, None] + values[:, None, :]).reshape(programs, -1)
        listed_mask = (listed_mask[:, :, None] & keep[:, None, :]).reshape(-1, listed.shape[1])
        listed_mask = np.broadcast_to(listed_mask, (programs, listed.shape[1]))
    run_programs, starts, ends = made[fast].runs()
    if _programs(made[fast]) == 1 and programs > 1:
        # the same runs for every program: (listed values, runs, programs)
        count = len(starts) * programs * listed.shape[1]
        if count > SPAN_CAP:
            raise TooLarge((count,))
        lo = listed.T[:, None, :] + starts[None, :, None]
        hi = listed.T[:, None, :] + ends[None, :, None]
        keep = np.broadcast_to(listed_mask.T[:, None, :], lo.shape)
    else:
        # (listed values, runs in the order of their programs)
        count = len(starts) * listed.shape[1]
        if count > SPAN_CAP:
            raise TooLarge((count,))
        lo = listed[run_programs].T + starts[None, :]
        hi = listed[run_programs].T + ends[None, :]
        keep = listed_mask[run_programs].T
    return merge(_joined(lo[keep], hi[keep]))


# the most kinds of programs (by the lane ranges of their listed groups) `_by_lane_ranges` takes
_KINDS_CAP = 64


def _by_lane_ranges(
    made: list[_Group], fast: int, base: np.ndarray, alive: np.ndarray, programs: int
) -> np.ndarray | None:
    """The bytes reached where every group but the one kept as runs has the same offsets for all programs and a lane
    range per program: programs with the same lane ranges reach the same offsets from their own runs, so the runs of
    each kind of program are merged first (the tiles of a row of tiles touch) and only then added to the offsets.
    None where that does not hold (or the programs are of too many kinds)."""
    others = [g for i, g in enumerate(made) if i != fast]
    bounds = [(g.lo, g.hi) for g in others]
    if any(lo is None or hi is None for lo, hi in bounds):
        return None
    ranges = [np.broadcast_to(b, (programs,)) for pair in bounds for b in pair if b is not None]
    key = np.stack(ranges, axis=1) if ranges else np.zeros((programs, 0), np.int64)
    kinds, which = np.unique(key, axis=0, return_inverse=True)
    if len(kinds) > _KINDS_CAP:
        return None
    which = which.reshape(-1)
    run_programs, starts, ends = made[fast].runs()
    if _programs(made[fast]) == 1 and programs > 1:
        # every program's runs listed: past the cap, the walk takes fewer programs at a time (a single-warp program
        # per position of a 29M-position launch listed 67M ranges here, for 17 CPU seconds over the check's budget)
        if programs * len(starts) > SPAN_CAP:
            raise TooLarge((programs * len(starts),))
        run_programs = np.repeat(np.arange(programs), len(starts))
        starts, ends = np.tile(starts, programs), np.tile(ends, programs)
    keep = alive[run_programs]
    run_programs, starts, ends = run_programs[keep], starts[keep], ends[keep]
    found = []
    for kind, bounds in enumerate(kinds):
        mine = which[run_programs] == kind
        runs = merge(np.stack([base[run_programs[mine]] + starts[mine], base[run_programs[mine]] + ends[mine]], 1))
        sums = np.zeros(1, np.int64)
        for i, group in enumerate(others):
            lo, hi = int(bounds[2 * i]), int(bounds[2 * i + 1])
            sums = (sums[:, None] + group.along[lo:hi][None, :]).reshape(-1)
        if len(sums) * len(runs) > SPAN_CAP:
            raise TooLarge((len(sums) * len(runs),))
        found.append((runs[None, :, :] + sums[:, None, None]).reshape(-1, 2))
    return merge(np.concatenate(found)) if found else np.zeros((0, 2), np.int64)


def _joined(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Ranges listed in an order where those that touch often follow each other (one listed value's ranges over the
    programs in turn), each run of touching ones made one range: a cheap pass before `merge` sorts them."""
    if len(starts) == 0:
        return np.zeros((0, 2), np.int64)
    fresh = np.ones(len(starts), bool)
    fresh[1:] = starts[1:] != ends[:-1]
    first = np.nonzero(fresh)[0]
    last = np.append(first[1:] - 1, len(starts) - 1)
    return np.stack([starts[first], ends[last]], axis=1)


def _programs(group: _Group) -> int:
    if group.lo is not None:
        assert group.hi is not None
        return max(len(group.lo), len(group.hi))
    return max(group.values.shape[0], group.mask.shape[0])
