"""A task's inputs for many seeds, drawn side by side on the CPU.

KernelBench's protocol draws inputs on the CPU, with PyTorch's CPU generator, which makes its numbers one after
another on one core: a Level 2 problem with 2 GiB of inputs spends seconds on each trial's seed, and the judge
used to draw them in turn while the GPU waited. Here the judge draws its first seed itself and, when that took
long enough to be worth it, hands the other seeds to processes forked from it, one seed each, several at a
time, while it builds the model itself.

Each child calls the task's `get_inputs` under its seed exactly as the judge would (same module, same seed,
same generator), so the values are the same bit for bit: PyTorch's CPU random kernels run serially whatever
the thread count. A child copies the bytes of each tensor's storage into an anonymous in-memory file the judge
made before forking, and pickles the rest (the values' structure, each tensor's type, shape, strides and place
in the file, and any value that is not a tensor) into a second one; the judge maps the first (no copy) and
rebuilds the values over it. A child never touches the GPU: a task whose values are not all plain CPU tensors
and picklable values, or a child that fails (the task's own error included), is drawn again by the judge
itself, which then raises the task's error as it always did.

Children run on the cores the judge is not pinned to (its own are kept quiet for timing), and no more of
them than the host's available memory holds twice over.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pickle
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import torch

from adaexplore.executor.worker.task._taskrun import draw_args, tensors_in

__all__ = ["DrawReport", "SideBySide", "draw_side_by_side"]

# below this, a seed's draw costs less than forking a process and passing its values back
MIN_DRAW_S = 0.25
MAX_PROCESSES = 8


@dataclass
class DrawReport:
    """How one reference's inputs were drawn: wall time, and how many seeds were drawn by forked processes."""

    seconds: float = 0.0
    in_processes: int = 0
    processes: int = 0
    # why processes drew fewer seeds than they were given, where it was not the task's values
    note: str = ""


@dataclass
class SideBySide:
    """Draws in flight: `collect` waits for each in turn and returns the values, in the order of the seeds."""

    module: ModuleType
    seeds: list[int]
    report: DrawReport
    _children: list[tuple[int, int, tuple[int, int]]] = field(default_factory=list)  # (index, pid, files)
    _next: int = 0
    _limit: int = 1
    _cpus: frozenset[int] | None = None

    def start(self) -> None:
        while self._next < len(self.seeds) and len(self._children) < self._limit:
            try:
                pid, files = _fork_draw(self.module, self.seeds[self._next], self._cpus)
            except OSError as exc:  # no process or in-memory file: the judge draws the rest itself
                self.report.note = f"the judge drew the rest itself: {exc}"
                self._limit = 0
                return
            self._children.append((self._next, pid, files))
            self._next += 1

    def collect(self) -> Iterator[tuple[int, list[Any]]]:
        """(index into `seeds`, values) for each seed, drawn by a child or, where one did not, by the judge."""
        try:
            while self._children:
                index, pid, files = self._children.pop(0)
                _, status = os.waitpid(pid, 0)
                try:
                    values = _read_back(files) if os.waitstatus_to_exitcode(status) == 0 else None
                except OSError as exc:
                    self.report.note = f"a seed's values did not read back: {exc}"
                    values = None
                finally:
                    _close(files)
                self.start()
                if values is None:
                    values = draw_args(self.module, "get_inputs", self.seeds[index])
                else:
                    self.report.in_processes += 1
                yield index, values
            # seeds no process took (none could be started): drawn here, in order
            while self._next < len(self.seeds):
                self._next += 1
                yield self._next - 1, draw_args(self.module, "get_inputs", self.seeds[self._next - 1])
        finally:
            self.close()

    def close(self) -> None:
        """End every child still drawing (the judge gave up on these inputs)."""
        for _, pid, files in self._children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            _close(files)
        self._children.clear()


def draw_side_by_side(
    module: ModuleType, first: list[Any], first_s: float, seeds: list[int], report: DrawReport
) -> SideBySide | None:
    """Start drawing `seeds` in forked processes, given the judge's own draw of the first seed (`first`, which
    took `first_s`); None where drawing them one after another here is as good (a quick draw, values not all
    on the CPU, one core, or too little memory)."""
    if not seeds or first_s < MIN_DRAW_S:
        return None
    held = tensors_in(first)
    if any(t.device.type != "cpu" for t in held):
        return None
    nbytes = sum(t.untyped_storage().nbytes() for t in held)
    cpus = _spare_cpus()
    limit = min(MAX_PROCESSES, len(seeds), len(cpus) if cpus else len(os.sched_getaffinity(0)))
    if nbytes:
        # each child holds its draw and the file it copies it to, and the judge the files it has not yet moved
        # on: keep that within half of what the host has available
        limit = min(limit, int(_available_bytes() // 2 // (3 * nbytes)))
    if limit < 2:
        return None
    report.processes = limit
    drawing = SideBySide(module, seeds, report, _limit=limit, _cpus=cpus)
    drawing.start()
    return drawing


def _fork_draw(module: ModuleType, seed: int, cpus: frozenset[int] | None) -> tuple[int, tuple[int, int]]:
    """A child that draws `seed`'s inputs into two new in-memory files; (its pid, (the bytes, the layout))."""
    data = os.memfd_create(f"inputs-{seed}", os.MFD_CLOEXEC)
    try:
        layout = os.memfd_create(f"inputs-{seed}-layout", os.MFD_CLOEXEC)
    except OSError:
        os.close(data)
        raise
    try:
        pid = os.fork()
    except OSError:
        _close((data, layout))
        raise
    if pid == 0:  # the child: draw, write, leave without running the judge's exit handlers
        code = 1
        try:
            ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: gone with the judge
            if cpus:
                with contextlib.suppress(OSError):  # a cpuset that holds none of them: the judge's cores
                    os.sched_setaffinity(0, cpus)
            torch.set_num_threads(1)
            _write(draw_args(module, "get_inputs", seed), data, layout)
            code = 0
        except BaseException:  # any failure is the judge's to meet again, by drawing the seed itself
            code = 1
        finally:
            os._exit(code)
    return pid, (data, layout)


@dataclass(frozen=True)
class _Slot:
    """A tensor's place in the file of bytes: its storage's range, and the view of it."""

    start: int
    nbytes: int
    dtype: torch.dtype
    size: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int


def _write(values: list[Any], data: int, layout: int) -> None:
    """Each tensor's storage bytes into `data` (once per storage, 64-byte aligned), the rest pickled into
    `layout`.

    Raises:
        ValueError: a tensor this cannot pass as it is (not a plain strided CPU tensor).
    """
    places: dict[int, tuple[int, torch.UntypedStorage]] = {}
    end = 0

    def slot(t: torch.Tensor) -> _Slot:
        nonlocal end
        if type(t) is not torch.Tensor or t.device.type != "cpu" or t.layout != torch.strided or t.requires_grad:
            raise ValueError("not a plain CPU tensor")
        if t.is_conj() or t.is_neg():
            raise ValueError("a lazily conjugated or negated view")
        storage = t.untyped_storage()
        if storage.data_ptr() not in places:
            places[storage.data_ptr()] = (end, storage)
            end += -(-storage.nbytes() // 64) * 64
        start, _ = places[storage.data_ptr()]
        return _Slot(start, storage.nbytes(), t.dtype, tuple(t.size()), tuple(t.stride()), int(t.storage_offset()))

    structure = _mapped(values, torch.Tensor, slot)
    if end:
        os.ftruncate(data, end)
        mapped = torch.UntypedStorage.from_file(f"/proc/self/fd/{data}", shared=True, nbytes=end)
        for start, storage in places.values():
            if storage.nbytes():
                mapped[start : start + storage.nbytes()].copy_(storage)
    with open(f"/proc/self/fd/{layout}", "wb") as out:
        pickle.dump((end, structure), out)


def _mapped(value: Any, leaf: type, fn: Callable[[Any], Any]) -> Any:
    """`value` with every `leaf` in it (within plain lists and tuples) replaced by `fn` of it."""
    if isinstance(value, leaf):
        return fn(value)
    if isinstance(value, list | tuple) and type(value) in (list, tuple):
        return type(value)(_mapped(v, leaf, fn) for v in value)
    return value


def _read_back(files: tuple[int, int]) -> list[Any] | None:
    """The values a child wrote, over a private mapping of its bytes (not copied); None where it wrote none."""
    data, layout = files
    with open(f"/proc/self/fd/{layout}", "rb") as inp:
        if not os.fstat(inp.fileno()).st_size:
            return None
        end, structure = pickle.load(inp)
    mapped = torch.UntypedStorage.from_file(f"/proc/self/fd/{data}", shared=False, nbytes=end) if end else None

    def tensor(slot: _Slot) -> torch.Tensor:
        storage = mapped[slot.start : slot.start + slot.nbytes] if mapped is not None else torch.UntypedStorage(0)
        return torch.empty(0, dtype=slot.dtype).set_(storage, slot.offset, slot.size, slot.stride)

    return list(_mapped(structure, _Slot, tensor))


def _close(files: tuple[int, int]) -> None:
    for fd in files:
        os.close(fd)


def _spare_cpus() -> frozenset[int] | None:
    """The cores the children draw on: those of the machine the judge is not pinned to (the judge measures on
    its own), or the judge's where it is not pinned."""
    mine = os.sched_getaffinity(0)
    count = os.cpu_count() or len(mine)
    others = frozenset(range(count)) - mine
    return others or None


def _available_bytes() -> int:
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0
