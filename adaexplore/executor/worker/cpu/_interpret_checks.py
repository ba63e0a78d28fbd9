"""The checks the interpreter makes of a kernel's run, which the plain interpreter does not: `tl.device_assert`
turned on, and every load, store and atomic of the kernel within the memory of the tensors it was passed (an
argument that only looks like a tensor is refused). Installed by `_interpret_shim.install`."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from triton.runtime import interpreter as _interp
from triton.tools.tensor_descriptor import TensorDescriptor

from adaexplore.executor.worker.confine._faults import DeviceAssertFailed, FakeTensorArgument, KernelOOBError

__all__ = ["install_bounds_checker", "install_device_assert"]

if TYPE_CHECKING:  # Triton ships no types: to mypy these are classes whose every member is Any

    class _Handle(Any): ...

    class _Builder(Any): ...

else:
    _Handle = _interp.TensorHandle
    _Builder = _interp.InterpreterBuilder


# ---- device_assert on -------------------------------------------------------------------------------
def install_device_assert() -> None:
    builder = _interp.interpreter_builder
    # debug turns on tl.device_assert; overflow sanitizing stays off, as on the GPU by default.
    builder.options = dataclasses.replace(builder.options, debug=True, sanitize_overflow=False)

    def create_assert(self: _Builder, condition: Any, message: str) -> None:
        values = np.asarray(condition.data if isinstance(condition, _Handle) else condition)
        if not values.all():
            failing = int(values.size - np.count_nonzero(values))
            raise DeviceAssertFailed(f"device_assert failed in program {self.grid_idx} ({failing} lanes): {message}")

    _Builder.create_assert = create_assert


# ---- bounds checking ---------------------------------------------------------------------------------
@dataclasses.dataclass
class _Range:
    start: int
    end: int
    label: str


class _Launch:
    kernel = "?"
    ranges: list[_Range] = []  # noqa: RUF012 -- replaced per launch


def _collect_ranges(value: Any, label: str, out: list[_Range]) -> None:
    if isinstance(value, torch.Tensor):
        storage = torch.Tensor.untyped_storage(value)  # through the class: an own attribute cannot shadow it
        dtype = str(value.dtype).removeprefix("torch.")
        out.append(
            _Range(storage.data_ptr(), storage.data_ptr() + storage.nbytes(), f"{label} {tuple(value.shape)} {dtype}")
        )
    elif isinstance(value, tuple | list):
        for item in value:
            _collect_ranges(item, label, out)
    elif hasattr(value, "base") and isinstance(getattr(value, "base", None), torch.Tensor):
        _collect_ranges(value.base, label, out)


def _refuse_fake_tensors(value: Any, label: str) -> None:
    """The interpreter takes anything with a data_ptr for a tensor, calls its methods and reads wherever it
    points: such an argument must be a tensor (or hold one, as a tensor descriptor does)."""
    if isinstance(value, torch.Tensor):
        return
    if isinstance(value, tuple | list):
        for item in value:
            _refuse_fake_tensors(item, label)
    elif isinstance(value, TensorDescriptor):  # a host-side descriptor: its base is what the kernel reads
        _refuse_fake_tensors(value.base, f"{label}.base")
    elif hasattr(value, "data_ptr") and not isinstance(getattr(value, "base", None), torch.Tensor):
        raise FakeTensorArgument(
            f"kernel argument {label} is a {type(value).__name__} with a data_ptr, not a torch.Tensor; pass tensors"
        )


def _check_access(builder: _Builder, ptrs: _Handle, mask: _Handle | None, what: str) -> None:
    ranges = _Launch.ranges
    if not ranges:
        # no tensor argument: every address the kernel could touch came from somewhere else
        raise KernelOOBError(
            f"{what} in kernel {_Launch.kernel}, which was given no tensor: a kernel may touch only the memory "
            "of the tensors it is passed."
        )
    addresses = np.asarray(ptrs.data).astype(np.uint64)
    active = (
        np.ones(addresses.shape, bool)
        if mask is None
        else np.broadcast_to(np.asarray(mask.data, bool), addresses.shape)
    )
    size = np.uint64(max(1, ptrs.get_element_ty().primitive_bitwidth // 8))
    inside = np.zeros(addresses.shape, bool)
    for r in ranges:
        inside |= (addresses >= np.uint64(r.start)) & (addresses + size <= np.uint64(r.end))
    bad = active & ~inside
    if not bad.any():
        return
    first = int(addresses[bad].flat[0])
    nearest = min(ranges, key=lambda r: min(abs(first - r.start), abs(first - r.end)))
    raise KernelOOBError(
        f"out-of-bounds {what} in kernel {_Launch.kernel}, program {builder.grid_idx}: {int(bad.sum())} active "
        f"lanes point outside every tensor argument; the first is at byte offset {first - nearest.start} of "
        f"{nearest.label}, whose storage is {nearest.end - nearest.start} bytes. Mask the access "
        "(mask=offsets < n) or fix the offset arithmetic."
    )


def install_bounds_checker() -> None:
    init_args = _interp.GridExecutor._init_args_hst

    def _init_args_hst(self: Any, args_dev: Any, kwargs: Any) -> Any:
        for index, value in enumerate(args_dev):
            _refuse_fake_tensors(value, self.arg_names[index] if index < len(self.arg_names) else f"argument {index}")
        for name, value in kwargs.items():
            _refuse_fake_tensors(value, name)
        args_hst, kwargs_hst = init_args(self, args_dev, kwargs)
        ranges: list[_Range] = []
        for index, value in enumerate(args_hst):
            name = self.arg_names[index] if index < len(self.arg_names) else f"argument {index}"
            _collect_ranges(value, name, ranges)
        for name, value in kwargs_hst.items():
            _collect_ranges(value, name, ranges)
        _Launch.ranges = ranges
        _Launch.kernel = getattr(self.fn, "__name__", "?")
        return args_hst, kwargs_hst

    _interp.GridExecutor._init_args_hst = _init_args_hst
    load, store = _Builder.create_masked_load, _Builder.create_masked_store
    rmw, cas = _Builder.create_atomic_rmw, _Builder.create_atomic_cas

    # The interpreter passes the cache and eviction hints by keyword where a tensor descriptor loads or stores.
    def create_masked_load(self: _Builder, ptrs: _Handle, mask: Any, other: Any, *rest: Any, **hints: Any) -> _Handle:
        _check_access(self, ptrs, mask, "load")
        return load(self, ptrs, mask, other, *rest, **hints)

    def create_masked_store(self: _Builder, ptrs: _Handle, value: Any, mask: Any, *rest: Any, **hints: Any) -> Any:
        _check_access(self, ptrs, mask, "store")
        return store(self, ptrs, value, mask, *rest, **hints)

    def create_atomic_rmw(
        self: _Builder, op: Any, ptr: _Handle, val: Any, mask: Any, *rest: Any, **hints: Any
    ) -> _Handle:
        _check_access(self, ptr, mask, "atomic")
        return rmw(self, op, ptr, val, mask, *rest, **hints)

    def create_atomic_cas(self: _Builder, ptr: _Handle, cmp: Any, val: Any, *rest: Any, **hints: Any) -> _Handle:
        _check_access(self, ptr, None, "atomic_cas")
        return cas(self, ptr, cmp, val, *rest, **hints)

    _Builder.create_masked_load = create_masked_load
    _Builder.create_masked_store = create_masked_store
    _Builder.create_atomic_rmw = create_atomic_rmw
    _Builder.create_atomic_cas = create_atomic_cas
