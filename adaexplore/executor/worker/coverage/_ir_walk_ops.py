"""The operations of a walk of Triton IR (see `_ir_walk`): the environment of values, integer and boolean
arithmetic, the block's shapes, pointers, and the stores and loads handed on as `Access`es."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from adaexplore.executor.worker.coverage._ir_walk_values import (
    Bools,
    Compare,
    Frame,
    Ints,
    Ptr,
    Value,
    dense_size_check,
    is_int,
    result_type,
    split_types,
    type_shape,
)

__all__ = ["Access", "WalkOps"]

_PREDICATES = {
    "slt": "lt",
    "ult": "lt",
    "sle": "le",
    "ule": "le",
    "sgt": "gt",
    "ugt": "gt",
    "sge": "ge",
    "uge": "ge",
    "eq": "eq",
    "ne": "ne",
}


@dataclass
class Access:
    """One store (or watched load) met by the walk, for the programs of the frame it was met in."""

    kind: str  # "store" or "load"
    origin: frozenset[str] | None  # the kernel arguments it addresses (None: any)
    elem: int  # bytes per element
    offset: Ints | None  # bytes from where the argument points (None: anywhere in it)
    mask: Bools | None  # None: every lane
    shape: tuple[int, ...]
    certain: bool  # met on a path every program of the frame surely takes


def _trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if (a.size == 0 or a.min() >= 0) and b.size and b.min() > 0:
        return a // b
    with np.errstate(divide="ignore", invalid="ignore"):
        safe = np.where(b == 0, 1, b)
        q = np.abs(a) // np.abs(safe)
        return np.where((a >= 0) == (safe > 0), q, -q)


def _binary(name: str, a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    if name in ("arith.divsi", "arith.divui"):
        return _trunc_div(a, b)
    if name in ("arith.remsi", "arith.remui"):
        return a - b * _trunc_div(a, b)
    if name == "arith.ceildivsi":
        return -((-a) // np.where(b == 0, 1, b))
    if name == "arith.floordivsi":
        return a // np.where(b == 0, 1, b)
    if name in ("arith.minsi", "arith.minui"):
        return np.minimum(a, b)
    if name in ("arith.maxsi", "arith.maxui"):
        return np.maximum(a, b)
    if name == "arith.andi":
        return a & b
    if name == "arith.ori":
        return a | b
    if name == "arith.xori":
        return a ^ b
    if name == "arith.shli":
        return a << np.clip(b, 0, 63)
    if name in ("arith.shrsi", "arith.shrui"):
        return a >> np.clip(b, 0, 63)
    return None


class WalkOps:
    """The environment and the operations of a walk that are not control flow."""

    def __init__(self, sink: Callable[[Access], None], watch: frozenset[str], grid: tuple[int, int, int]) -> None:
        self.sink = sink
        self.watch = watch
        self.grid = grid
        self.env: dict[str, tuple[Frame, Value]] = {}
        self.frame: Frame | None = None
        self.certain = True

    # ---- the environment ---------------------------------------------------------------------------------
    def get(self, name: str) -> Value:
        held = self.env.get(name)
        if held is None:
            return None
        frame, value = held
        assert self.frame is not None
        if frame is self.frame or value is None:
            return value
        cached = self.frame.cache.get(name)
        if cached is not None and cached[0] is value:  # type: ignore[index]
            return cached[1]  # type: ignore[index]
        restricted = value.restricted(self.frame.rows_in(frame))
        self.frame.cache[name] = (value, restricted)
        return restricted

    def set(self, name: str, value: Value) -> None:
        assert self.frame is not None
        self.env[name] = (self.frame, value)
        self.frame.cache.pop(name, None)

    def scalar(self, value: Value) -> np.ndarray | None:
        """A scalar integer as one number per program of the frame (shape (programs or 1,))."""
        if isinstance(value, Ints) and not value.shape:
            return value.dense().reshape(-1)
        return None

    def _constant(self, op: Any) -> None:
        head, types = split_types(op.text)
        literal = head.strip()
        shape = type_shape(types)
        dense = re.fullmatch(r"dense<(.+)>", literal)
        if dense:
            literal = dense.group(1).strip()
        value: Value = None
        if literal in ("true", "false"):
            value = Bools(shape) if literal == "true" else Bools(shape, [np.zeros((1,) * (1 + len(shape)), bool)])
        elif re.fullmatch(r"-?\d+", literal) and is_int(types):
            value = Ints.const(int(literal), shape)
        self.set(op.results[0], value)

    def _arith(self, op: Any) -> None:
        name = op.name
        operands = [self.get(o) for o in op.operands()]
        rtype = result_type(op)
        shape = type_shape(rtype)
        out: Value = None
        if name in (
            "arith.extsi",
            "arith.extui",
            "arith.trunci",
            "arith.index_cast",
            "arith.index_castui",
            "arith.bitcast",
        ):
            source = operands[0] if operands else None
            out = source if isinstance(source, Ints | Bools) else None
            if (
                isinstance(source, Bools)
                and is_int(rtype)
                and not rtype.strip().endswith("i1>")
                and rtype.strip() != "i1"
            ):
                out = Ints(shape, [source.dense().astype(np.int64)]) if source.exact else None
        elif name == "arith.cmpi":
            out = self._compare(op, operands, shape)
        elif name == "arith.select":
            out = self._select(operands, shape)
        elif name in ("arith.andi", "arith.ori", "arith.xori") and (
            any(isinstance(v, Bools) for v in operands) or rtype.strip().endswith("i1") or rtype.strip().endswith("i1>")
        ):
            out = self._logic(name, operands, shape)
        elif all(isinstance(v, Ints) for v in operands) and operands and is_int(rtype):
            a = operands[0]
            b = operands[1] if len(operands) > 1 else None
            assert isinstance(a, Ints)
            if name == "arith.addi" and isinstance(b, Ints):
                out = a.plus(b)
            elif name == "arith.subi" and isinstance(b, Ints):
                out = a.plus(b.negated())
            elif name == "arith.muli" and isinstance(b, Ints):
                if b.uniform_block():
                    out = a.scaled(b.dense())
                elif a.uniform_block():
                    out = b.scaled(a.dense())
                else:
                    out = Ints(shape, [a.dense() * b.dense()])
            elif isinstance(b, Ints):
                computed = _binary(name, a.dense(), b.dense())
                out = Ints(shape, [computed]) if computed is not None else None
        if isinstance(out, Ints | Bools):
            out.shape = shape
        for result in op.results:
            self.set(result, out)

    def _compare(self, op: Any, operands: list[Value], shape: tuple[int, ...]) -> Value:
        predicate = _PREDICATES.get(op.text.split(",")[0].strip())
        if predicate is None or len(operands) < 2:
            return None
        a, b = operands[0], operands[1]
        if not (isinstance(a, Ints) and isinstance(b, Ints)):
            return None
        return Bools(shape, [Compare(predicate, a.plus(b.negated()))])

    def _select(self, operands: list[Value], shape: tuple[int, ...]) -> Value:
        if len(operands) < 3:
            return None
        cond, a, b = operands
        if isinstance(a, Ptr) and isinstance(b, Ptr):
            origin = None if a.origin is None or b.origin is None else a.origin | b.origin
            offset = None
            if isinstance(cond, Bools) and cond.exact and a.offset is not None and b.offset is not None:
                offset = Ints(shape, [np.where(cond.dense(), a.offset.dense(), b.offset.dense())])
            return Ptr(shape, origin, a.elem if a.elem == b.elem else 1, offset)
        if not (isinstance(cond, Bools) and cond.exact):
            return None
        if isinstance(a, Ints) and isinstance(b, Ints):
            return Ints(shape, [np.where(cond.dense(), a.dense(), b.dense())])
        if isinstance(a, Bools) and isinstance(b, Bools) and a.exact and b.exact:
            return Bools(shape, [np.where(cond.dense(), a.dense(), b.dense())])
        return None

    def _logic(self, name: str, operands: list[Value], shape: tuple[int, ...]) -> Value:
        bools = [v for v in operands if isinstance(v, Bools)]
        if name == "arith.andi":
            parts = [p for v in bools for p in v.parts]
            exact = len(bools) == len(operands) and all(v.exact for v in bools)
            return Bools(shape, parts, exact)  # a conjunct that depends on data is left out: an upper bound
        if len(bools) != len(operands) or not all(v.exact for v in bools):
            return None
        a, b = (v.dense() for v in bools)
        return Bools(shape, [a | b if name == "arith.ori" else a ^ b])

    # ---- block shapes --------------------------------------------------------------------------------------
    def _splat(self, op: Any) -> None:
        value = self.get(op.operands()[0])
        shape = type_shape(op.types().split("->")[-1])
        self.set(op.results[0], _reshape(value, shape, lambda a: a.reshape(a.shape[:1] + (1,) * len(shape))))

    def _make_range(self, op: Any) -> None:
        start = int(re.search(r"start\s*=\s*(-?\d+)", op.text).group(1))  # type: ignore[union-attr]
        end = int(re.search(r"end\s*=\s*(-?\d+)", op.text).group(1))  # type: ignore[union-attr]
        self.set(op.results[0], Ints((end - start,), [np.arange(start, end, dtype=np.int64).reshape(1, -1)]))

    def _expand_dims(self, op: Any) -> None:
        axis = int(re.search(r"axis\s*=\s*(\d+)", op.text).group(1))  # type: ignore[union-attr]
        value = self.get(op.operands()[0])
        shape = type_shape(op.types().split("->")[-1])
        self.set(op.results[0], _reshape(value, shape, lambda a: np.expand_dims(a, axis + 1)))

    def _broadcast(self, op: Any) -> None:
        value = self.get(op.operands()[0])
        shape = type_shape(op.types().split("->")[-1])
        self.set(op.results[0], _reshape(value, shape, lambda a: a))

    def _reshape_op(self, op: Any) -> None:
        value = self.get(op.operands()[0])
        old = type_shape(op.types().split("->")[0])
        shape = type_shape(op.types().split("->")[-1])
        if [n for n in old if n != 1] == [n for n in shape if n != 1]:

            def fn(a: np.ndarray) -> np.ndarray:  # only unit axes come or go
                kept = [a.shape[1 + i] for i, n in enumerate(old) if n != 1]
                it = iter(kept)
                return a.reshape(a.shape[:1] + tuple(next(it) if n != 1 else 1 for n in shape))
        else:

            def fn(a: np.ndarray) -> np.ndarray:
                full = np.broadcast_to(a, a.shape[:1] + old)
                dense_size_check(full.shape)
                return full.reshape(a.shape[:1] + shape)

            if isinstance(value, Ints):
                value = Ints(old, [value.dense()])
            elif isinstance(value, Bools):
                value = Bools(old, [value.dense()], value.exact)
            elif isinstance(value, Ptr) and value.offset is not None:
                value = Ptr(old, value.origin, value.elem, Ints(old, [value.offset.dense()]))
        self.set(op.results[0], _reshape(value, shape, fn))

    def _trans(self, op: Any) -> None:
        order = [int(x) for x in re.search(r"order\s*=\s*array<i32:\s*([\d,\s]+)>", op.text).group(1).split(",")]  # type: ignore[union-attr]
        value = self.get(op.operands()[0])
        shape = type_shape(op.types().split("->")[-1])
        self.set(op.results[0], _reshape(value, shape, lambda a: a.transpose([0] + [1 + i for i in order])))


def _reshape(value: Value, shape: tuple[int, ...], fn: Callable[[np.ndarray], np.ndarray]) -> Value:
    if isinstance(value, Ints):
        return Ints(shape, [fn(p) for p in value.parts])
    if isinstance(value, Bools):
        out = value.reshaped(fn)
        out.shape = shape
        return out
    if isinstance(value, Ptr):
        offset = Ints(shape, [fn(p) for p in value.offset.parts]) if value.offset is not None else None
        return Ptr(shape, value.origin, value.elem, offset)
    return None
