"""A tensor as the bytes of its storage it covers, and back: which element of the tensor a byte belongs to."""

from __future__ import annotations

import math

import numpy as np
import torch

__all__ = ["RUNS_CAP", "element_index", "view_spans"]

# the most ranges a tensor's bytes are listed as (a tensor whose innermost axis is not its storage's is one range per
# element); past it the tensor is not followed
RUNS_CAP = 1 << 22


def _axes(t: torch.Tensor) -> list[tuple[int, int]]:
    """(size, stride in elements) of the tensor's axes that hold more than one element, the largest stride first,
    axes that continue each other merged."""
    axes = sorted(((n, s) for n, s in zip(t.shape, t.stride(), strict=True) if n > 1), key=lambda a: -a[1])
    merged: list[tuple[int, int]] = []
    for size, stride in axes:
        if merged and merged[-1][1] == size * stride:
            outer = merged.pop()
            merged.append((outer[0] * size, stride))
        else:
            merged.append((size, stride))
    return merged


def view_spans(t: torch.Tensor) -> np.ndarray | None:
    """The bytes of `t`'s storage that `t` covers, as sorted, disjoint [start, end) ranges from the storage's start;
    None where they would be more than RUNS_CAP ranges or the tensor's axes overlap."""
    size = t.element_size()
    base = t.storage_offset() * size
    if t.numel() == 0:
        return np.zeros((0, 2), np.int64)
    axes = _axes(t)
    if not axes:
        return np.array([[base, base + size]], np.int64)
    run = 1
    if axes[-1][1] == 1:
        run = axes[-1][0]
        axes = axes[:-1]
    count = math.prod(n for n, _ in axes) if axes else 1
    if count > RUNS_CAP:
        return None
    starts: np.ndarray = np.zeros(1, np.int64)
    for n, stride in axes:
        starts = (starts[:, None] + np.arange(n, dtype=np.int64)[None, :] * int(stride)).reshape(-1)
    starts = np.sort(starts) * size + base
    ends = starts + run * size
    if len(starts) > 1 and np.any(starts[1:] < ends[:-1]):
        return None  # axes that overlap (an expanded tensor): not followed
    return np.stack([starts, ends], axis=1)


def element_index(t: torch.Tensor, byte: int) -> list[int]:
    """The index of the element of `t` holding the storage's `byte` (which `t` covers)."""
    element = byte // t.element_size() - int(t.storage_offset())
    strides = [int(s) for s in t.stride()]
    order = sorted(range(t.dim()), key=lambda d: -strides[d])
    index = [0] * t.dim()
    for d in order:
        if t.shape[d] <= 1 or strides[d] == 0:
            continue
        index[d], element = divmod(element, strides[d])
        index[d] = min(index[d], int(t.shape[d]) - 1)
    return index
