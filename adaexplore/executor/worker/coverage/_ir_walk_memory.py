"""The memory operations of a walk of Triton IR (see `_ir_walk`): pointers, tensor descriptors, and the stores,
atomics and loads the walk hands on as `Access`es."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from adaexplore.executor.worker.coverage._ir_walk_ops import Access, WalkOps
from adaexplore.executor.worker.coverage._ir_walk_values import (
    Bools,
    Compare,
    Desc,
    Ints,
    Ptr,
    Value,
    elem_bytes,
    result_type,
    split_types,
    type_shape,
)

__all__ = ["MemoryOps"]


class MemoryOps(WalkOps):
    """Pointers and memory."""

    def _addptr(self, op: Any) -> None:
        operands = op.operands()
        ptr, offset = self.get(operands[0]), self.get(operands[1])
        shape = type_shape(op.types().split(",")[0]) if "tensor" in op.types().split(",")[0] else ()
        if not isinstance(ptr, Ptr):
            self.set(op.results[0], None)
            return
        moved = None
        if ptr.offset is not None and isinstance(offset, Ints):
            moved = ptr.offset.plus(offset.scaled(np.full(1, ptr.elem, np.int64)))
        self.set(op.results[0], Ptr(shape, ptr.origin, ptr.elem, moved))

    def _bitcast(self, op: Any) -> None:
        value = self.get(op.operands()[0])
        result = result_type(op)
        if isinstance(value, Ptr):
            self.set(op.results[0], Ptr(value.shape, value.origin, elem_bytes(result), value.offset))
        else:
            self.set(op.results[0], None)

    def _int_to_ptr(self, op: Any) -> None:
        self.set(op.results[0], Ptr(type_shape(result_type(op)), None, elem_bytes(result_type(op)), None))

    def _access(self, kind: str, pointer: Value, mask: Value, elem_type: str) -> None:
        if kind == "load" and not self.certain:
            return
        if not isinstance(pointer, Ptr):
            if kind == "store":
                self.sink(Access(kind, None, elem_bytes(elem_type), None, None, (), self.certain))
            return
        if kind == "load" and (pointer.origin is None or not (pointer.origin & self.watch)):
            return
        lanes = mask if isinstance(mask, Bools) else None
        if kind == "load" and (pointer.offset is None or (mask is not None and not (lanes and lanes.exact))):
            return  # a load's reach is taken only where it is known exactly
        elem = pointer.elem or elem_bytes(elem_type)
        self.sink(Access(kind, pointer.origin, elem, pointer.offset, lanes, pointer.shape, self.certain))

    def _store(self, op: Any) -> None:
        operands = op.operands()
        mask = self.get(operands[2]) if len(operands) > 2 else None
        if len(operands) > 2 and mask is None:
            mask = Bools(type_shape(op.types()), [], exact=False)  # a mask that depends on data: every lane may store
        self._access("store", self.get(operands[0]), mask, op.types().split(",")[0])

    def _load(self, op: Any) -> None:
        operands = op.operands()
        if self.watch:
            mask = self.get(operands[1]) if len(operands) > 1 else None
            if len(operands) > 1 and mask is None:
                mask = Bools((), [], exact=False)
            self._access("load", self.get(operands[0]), mask, op.types())
        for result in op.results:
            self.set(result, None)

    def _atomic(self, op: Any) -> None:
        operands = op.operands()
        pointer = next((self.get(o) for o in operands if isinstance(self.get(o), Ptr)), None)
        mask: Value = None
        if op.name == "tt.atomic_rmw" and len(operands) > 2:
            mask = self.get(operands[2])
            if mask is None:
                mask = Bools((), [], exact=False)
        self._access("store", pointer, mask, op.types().split("->")[0].split(",")[0].strip("( "))
        for result in op.results:
            self.set(result, None)

    def _make_descriptor(self, op: Any) -> None:
        head = split_types(op.text)[0]
        groups = re.findall(r"\[([^\]]*)\]", head)
        base = self.get(op.operands()[0])
        block = type_shape(op.types())
        if not isinstance(base, Ptr) or len(groups) < 2:
            self.set(op.results[0], None)
            return
        dims = [self._ints(name.strip()) for name in groups[0].split(",")]
        strides = [self._ints(name.strip()) for name in groups[1].split(",")]
        self.set(op.results[0], Desc(base.origin, base.elem, base.offset, dims, strides, block))

    def _ints(self, name: str) -> Ints | None:
        value = self.get(name)
        return value if isinstance(value, Ints) else None

    def _descriptor_store(self, op: Any) -> None:
        head = split_types(op.text)[0]
        desc = self.get(op.operands()[0])
        inside = re.search(r"\[([^\]]*)\]", head)
        offsets = [self._ints(name.strip()) for name in inside.group(1).split(",")] if inside else []
        if not isinstance(desc, Desc):
            self.sink(Access("store", None, 4, None, None, (), self.certain))
            return
        block = desc.block
        if (
            op.name == "tt.descriptor_scatter"
            or len(offsets) != len(block)
            or desc.base is None
            or any(v is None for v in [*offsets, *desc.strides, *desc.dims])
        ):
            self.sink(Access("store", desc.origin, desc.elem, None, None, block, self.certain))
            return
        rank = len(block)

        def spread(value: Ints) -> Ints:  # a scalar as a block of `rank` unit axes
            return Ints(block, [a.reshape(a.shape[:1] + (1,) * rank) for a in value.parts])

        offset = spread(desc.base)
        conjuncts: list[Any] = []
        for axis in range(rank):
            lanes = np.arange(block[axis], dtype=np.int64).reshape(
                (1, *(block[axis] if i == axis else 1 for i in range(rank)))
            )
            index = spread(offsets[axis]).plus(Ints(block, [lanes]))  # type: ignore[arg-type]
            stride = desc.strides[axis].dense().reshape((-1,) + (1,) * rank)  # type: ignore[union-attr]
            offset = offset.plus(index.scaled(stride * desc.elem))
            conjuncts.append(Compare("ge", index))
            conjuncts.append(Compare("lt", index.plus(spread(desc.dims[axis]).negated())))  # type: ignore[arg-type]
        self.sink(Access("store", desc.origin, desc.elem, offset, Bools(block, conjuncts), block, self.certain))
