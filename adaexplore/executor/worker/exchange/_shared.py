"""Laying tensors out in a shared device buffer, and reading them back on the other side.

The judge calls `share_inputs` and `output_layout`; the candidate's worker calls `SharedInputsView` and
`OutputSink`. Every offset and size is the judge's: the candidate's worker only copies into the slots it was
given, and an output whose shape or type does not match its slot is not copied at all (the judge refuses it
from its description alone). The worker copies each trial's inputs out of the judge's buffer as that trial
begins, and timing's as timing begins, so that it never holds more than one call's inputs at a time.
"""

from __future__ import annotations

from typing import Any

import torch

from adaexplore.executor.wire._protocol import DeviceExchange, SharedArg, SharedInputs, TensorFile, TensorSlot
from adaexplore.executor.worker.exchange._device_memory import DeviceBuffer, export_buffer

__all__ = ["OutputSink", "SharedInputsView", "output_layout", "share_inputs"]

_ALIGN = 256
_PLAIN = (int, float, bool, str, type(None))


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _nbytes(shape: list[int], dtype: torch.dtype) -> int:
    count = 1
    for n in shape:
        count *= n
    return count * torch.empty(0, dtype=dtype).element_size()


def _aligned(n: int) -> int:
    return -(-n // _ALIGN) * _ALIGN


def output_layout(outputs: list[tuple[list[int], torch.dtype]], sets: int) -> DeviceExchange:
    """Slots for `sets` calls' outputs, each call's outputs shaped as `outputs` (the reference's)."""
    layout: list[list[TensorSlot]] = []
    offset = 0
    for _ in range(sets):
        call = []
        for shape, dtype in outputs:
            call.append(TensorSlot(offset=offset, shape=shape, dtype=_dtype_name(dtype)))
            offset += _aligned(max(_nbytes(shape, dtype), 1))
        layout.append(call)
    return DeviceExchange(nbytes=max(offset, _ALIGN), sets=layout)


def share_inputs(
    trials: list[list[Any]], timing: list[Any], device: torch.device
) -> tuple[DeviceBuffer, SharedInputs] | None:
    """A new buffer holding a copy of every tensor argument, and its layout; None when an argument is neither a
    tensor on `device` nor a plain value (a list of tensors, say): then the candidate draws its own."""
    offset = 0
    placed: list[list[SharedArg]] = []
    tensors: list[tuple[int, torch.Tensor]] = []
    for args in [*trials, timing]:
        row = []
        for arg in args:
            if isinstance(arg, torch.Tensor) and type(arg) is torch.Tensor and arg.device == device:
                shape = list(arg.shape)
                row.append(SharedArg(tensor=TensorSlot(offset=offset, shape=shape, dtype=_dtype_name(arg.dtype))))
                tensors.append((offset, arg))
                offset += _aligned(max(_nbytes(shape, arg.dtype), 1))
            elif isinstance(arg, _PLAIN):
                row.append(SharedArg(value=arg))
            else:
                return None
        placed.append(row)
    buffer = export_buffer(max(offset, _ALIGN), device.index or 0)
    for start, t in tensors:
        buffer.view(start, list(t.shape), t.dtype).copy_(t)
    torch.cuda.synchronize(device)
    return buffer, SharedInputs(nbytes=buffer.nbytes, trials=placed[:-1], timing=placed[-1])


class SharedInputsView:
    """The judge's inputs where they lie in its buffer, which the candidate's worker maps read-only: each trial's
    arguments as views of the buffer (no copy: the trial copies them as it begins), and timing's as a copy of
    the worker's own, made when timing asks for it. `close` unmaps the buffer."""

    def __init__(self, buffer: DeviceBuffer, shared: SharedInputs) -> None:
        self.buffer = buffer
        self.shared = shared

    def _row(self, row: list[SharedArg]) -> list[Any]:
        args: list[Any] = []
        for arg in row:
            slot = arg.tensor
            args.append(arg.value if slot is None else self.buffer.view(slot.offset, slot.shape, _dtype(slot.dtype)))
        return args

    def trials(self) -> list[list[Any]]:
        """Each trial's arguments, their tensors views of the buffer."""
        return [self._row(row) for row in self.shared.trials]

    def timing(self) -> list[Any]:
        """Timing's arguments, their tensors copies of the worker's own."""
        copies = [t.clone() if isinstance(t, torch.Tensor) else t for t in self._row(self.shared.timing)]
        if any(isinstance(t, torch.Tensor) and t.is_cuda for t in copies):
            torch.cuda.synchronize(self.buffer.device)
        return copies

    def close(self) -> None:
        self.buffer.close()


def _dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name)
    assert isinstance(dtype, torch.dtype)
    return dtype


class OutputSink:
    """Copies the candidate's outputs of call `index` into their slots and describes them for the judge."""

    def __init__(self, buffer: DeviceBuffer, layout: DeviceExchange) -> None:
        self.buffer = buffer
        self.layout = layout

    @property
    def sets(self) -> int:
        return len(self.layout.sets)

    def put(self, index: int, tensors: list[torch.Tensor]) -> list[TensorFile]:
        slots = self.layout.sets[index] if index < len(self.layout.sets) else []
        described = []
        for j, t in enumerate(tensors):
            shape, dtype = list(t.shape), _dtype_name(t.dtype)
            if j < len(slots) and slots[j].shape == shape and slots[j].dtype == dtype:
                target = self.buffer.view(slots[j].offset, shape, t.dtype)
                torch.Tensor.copy_(target, t)
            described.append(TensorFile(path="", shape=shape, dtype=dtype, device=str(t.device)))
        torch.cuda.synchronize(self.buffer.device)
        return described
