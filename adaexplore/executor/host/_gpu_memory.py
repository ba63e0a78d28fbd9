"""Admission by bytes on one GPU: evaluations that run at once (`explore --parallel K`, `bench`, concurrent MCP
calls) each reserve the device memory they will take, judge side and candidate side, before they take any, so
that evaluations that would not fit side by side wait for each other instead of running the GPU out of memory.

The book counts, besides the reservations, the references the judge keeps that no evaluation uses (its `idle`
bytes, as the judge last reported them). Requests are granted in the order they came. One that does not fit
waits; when it is first in line and the judge keeps idle references, the judge is asked to drop them first. A
request of unknown size, or larger than the whole capacity, is granted once nothing else is reserved, and holds
the device alone. The capacity is the GPU's memory less a margin and less the CUDA contexts of the processes
that hold one whatever runs (the judge and the spare workers).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import anyio

from adaexplore.roofline import TaskWork

__all__ = ["CONTEXT_BYTES", "GpuMemory", "Grant"]

# What one process's CUDA context takes with its libraries' handles and workspaces (PyTorch, cuBLAS, cuDNN,
# Triton), rounded up.
CONTEXT_BYTES = 1 << 30
# Kept free of every reservation: the allocators' rounding and fragmentation, and whatever the estimates miss.
MARGIN_SHARE = 0.05
MIN_MARGIN_BYTES = 2 << 30


@dataclass
class Grant:
    """A request as it was granted: the bytes it holds, and whether it holds the device alone."""

    nbytes: int
    alone: bool


@dataclass(eq=False)
class _Ticket:
    need: int | None
    evicted: bool = False


class GpuMemory:
    """The reservations on one GPU (see the module's docstring). `resident`: the processes that hold a CUDA
    context on it whatever runs. `evict_idle`, set by whoever owns the judge: asks it to drop the references no
    evaluation uses (its report comes back through `learn`)."""

    def __init__(self, *, resident: int = 1) -> None:
        self.total = 0  # the device's memory, once the judge has said it
        self.resident = resident
        self.evict_idle: Callable[[], Awaitable[None]] | None = None
        # what each task's reference does at full size (by task file and cast), as the judge recorded it: the
        # estimates' source, asked for once per task (None: it could not be followed)
        self.works: dict[tuple[str, str | None], TaskWork | None] = {}
        self._idle = 0
        self._held: dict[_Ticket, int] = {}
        self._alone: set[_Ticket] = set()
        self._line: list[_Ticket] = []
        self._changed = anyio.Event()

    @property
    def capacity(self) -> int:
        """The bytes evaluations may reserve together (0 before the judge has said how much the device has)."""
        if self.total <= 0:
            return 0
        margin = max(int(self.total * MARGIN_SHARE), MIN_MARGIN_BYTES)
        return max(0, self.total - margin - self.resident * CONTEXT_BYTES)

    @property
    def reserved(self) -> int:
        return sum(self._held.values())

    @property
    def idle(self) -> int:
        return self._idle

    @property
    def waiting(self) -> int:
        return len(self._line)

    def learn(self, *, total: int | None = None, idle: int | None = None) -> None:
        """What the judge said: the device's memory, and the bytes of the references it keeps unused."""
        if total:
            self.total = total
        if idle is not None:
            self._idle = max(0, idle)
        self._notify()

    def fits(self, need: int | None) -> bool:
        """Whether `need` bytes would be granted now, were no one in line before it."""
        if not self._held:
            return True  # alone: whatever its size (an unknown one, or more than the device has)
        return not self._alone and self._room(need)

    def _room(self, need: int | None) -> bool:
        return need is not None and self.reserved + self._idle + need <= self.capacity

    @contextlib.asynccontextmanager
    async def reserve(self, need: int | None) -> AsyncIterator[Grant]:
        """Hold `need` bytes (None: unknown, so the whole device) while the caller works; waits for its turn and
        for room. Cancelled while it waits, it leaves the line."""
        ticket = _Ticket(need)
        self._line.append(ticket)
        try:
            while True:
                first = self._line[0] is ticket
                if first and self._idle and not self._room(need) and not ticket.evicted and self.evict_idle:
                    ticket.evicted = True  # once per request: the judge's answer updates `idle`
                    with contextlib.suppress(Exception):  # a judge that cannot answer keeps them; the wait stands
                        await self.evict_idle()
                    continue
                if first and self.fits(need):
                    break
                changed = self._changed
                await changed.wait()
            self._line.remove(ticket)
            alone = need is None or need > self.capacity
            self._held[ticket] = need if need is not None else self.capacity
            if alone:
                self._alone.add(ticket)
            self._notify()  # the next in line may fit beside it
            yield Grant(nbytes=self._held[ticket], alone=alone)
        finally:
            if ticket in self._line:
                self._line.remove(ticket)
            self._held.pop(ticket, None)
            self._alone.discard(ticket)
            self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()
