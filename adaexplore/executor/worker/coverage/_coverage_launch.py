"""Where one compiled launch writes, argument by argument, and which bytes of watched arguments it surely reads
(see `_ir_walk`, `_ir_walk_spans`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from adaexplore.executor.worker.coverage._ir_walk import Access, OutOfTime, walk_launch
from adaexplore.executor.worker.coverage._ir_walk_spans import access_spans, merge
from adaexplore.executor.worker.coverage._ir_walk_values import Desc, Ints, Ptr, TooLarge, Value
from adaexplore.roofline import parse_ttir

__all__ = ["Reach", "launch_reach"]


@dataclass
class Reach:
    """What one launch reaches: per tensor argument, the bytes it may write from where the argument points (None:
    anywhere in its storage), and the bytes of watched arguments it surely reads."""

    kernel: str
    grid: tuple[int, int, int]
    tensors: dict[str, torch.Tensor]
    writes: dict[str, np.ndarray | None] = field(default_factory=dict)
    reads: dict[str, np.ndarray] = field(default_factory=dict)
    note: str = ""  # why part of it is taken as reaching anywhere

    @property
    def programs(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    def describe(self) -> str:
        """ "_k over grid (1,)", the grid as the launch gave it (trailing unit axes dropped)."""
        grid = list(self.grid)
        while len(grid) > 1 and grid[-1] == 1:
            grid.pop()
        return f"{self.kernel} over grid ({', '.join(str(g) for g in grid)}{',' if len(grid) == 1 else ''})"


def _tensor_of(value: Any) -> torch.Tensor | None:
    if isinstance(value, torch.Tensor):
        return value
    base = getattr(value, "base", None)
    return base if isinstance(base, torch.Tensor) else None


def _walk_args(bound: dict[str, Any]) -> tuple[dict[str, Value], dict[str, torch.Tensor]]:
    values: dict[str, Value] = {}
    tensors: dict[str, torch.Tensor] = {}
    for name, value in bound.items():
        if isinstance(value, bool):
            values[name] = Ints.const(int(value))
        elif isinstance(value, int):
            values[name] = Ints.const(value)
        elif isinstance(value, torch.Tensor):
            tensors[name] = value
            values[name] = Ptr((), frozenset({name}), value.element_size(), Ints.const(0))
        elif _tensor_of(value) is not None and hasattr(value, "block_shape"):
            base = _tensor_of(value)
            assert base is not None
            tensors[name] = base
            values[name] = Desc(
                frozenset({name}),
                base.element_size(),
                Ints.const(0),
                [Ints.const(int(n)) for n in value.shape],
                [Ints.const(int(s)) for s in value.strides],
                tuple(int(b) for b in value.block_shape),
            )
    return values, tensors


def launch_reach(
    jit: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    grid: Any,
    kernel: Any,
    watched: set[str],
    deadline: float,
) -> Reach:
    """The reach of a launch of `jit` the compile-only pass just compiled (`kernel`), the arguments named in
    `watched` followed for their reads too. Whatever the walk cannot follow (a deadline passed, arrays too large)
    is taken as written anywhere and read nowhere, and `note` says so."""
    from triton.runtime.driver import driver

    binder = jit.device_caches[driver.active.get_current_device()][4]
    bound, _, _ = binder(*args, **kwargs)
    bound = dict(bound)
    resolved = grid(bound) if callable(grid) else grid
    dims = tuple(int(g) for g in resolved)[:3]
    dims = dims + (1,) * (3 - len(dims))
    values, tensors = _walk_args(bound)
    reach = Reach(jit.__name__, (dims[0], dims[1], dims[2]), tensors)
    written: dict[str, list[np.ndarray]] = {}
    anywhere: set[str] = set()
    read: dict[str, list[np.ndarray]] = {}
    unknown: set[str] = set()  # arguments stored into at addresses that depend on data
    masked: set[str] = set()  # ... under masks that depend on data

    def sink(accesses: list[Access]) -> None:
        # every range of this share first, then kept: a share walked again in smaller parts is not counted twice
        found: list[tuple[Access, np.ndarray | None]] = []
        for access in accesses:
            if time.thread_time() > deadline:
                raise OutOfTime()
            found.append((access, access_spans(access)))
        for access, spans in found:
            names = access.origin if access.origin is not None else frozenset(tensors)
            for name in names:
                if name not in tensors:
                    continue
                if access.kind == "load":
                    if spans is not None and access.certain and access.origin is not None and len(names) == 1:
                        read.setdefault(name, []).append(spans)
                elif spans is None:
                    anywhere.add(name)
                    unknown.add(name)
                else:
                    written.setdefault(name, []).append(spans)
                    if access.mask is not None and not access.mask.exact:
                        masked.add(name)

    try:
        walk_launch(
            parse_ttir(kernel.asm["ttir"]),
            values,
            reach.grid,
            sink,
            watch=frozenset(watched & set(tensors)),
            deadline=deadline,
        )
    except (OutOfTime, TooLarge) as exc:
        reach.note = "it ran out of time" if isinstance(exc, OutOfTime) else "its blocks are too large to follow"
        anywhere.update(tensors)
        read.clear()
    else:
        said = []
        if unknown:
            said.append(f"its stores into {', '.join(sorted(unknown))} go where data says")
        if masked - unknown:
            said.append(f"its stores into {', '.join(sorted(masked - unknown))} are masked by data")
        reach.note = "; ".join(said)
    reach.writes = {name: merge(np.concatenate(spans)) for name, spans in written.items()}
    for name in anywhere:
        reach.writes[name] = None
    reach.reads = {name: merge(np.concatenate(spans)) for name, spans in read.items()}
    return reach
