"""Work that a first Ctrl-C abandons at once: each piece runs in a scope of its own, which `abandon` cancels, and
its caller reads `cancelled_caught` to say that it was stopped (what finished before is kept by whoever stored
it)."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

import anyio

__all__ = ["Abandonable", "deaf_to_signals"]


def deaf_to_signals() -> None:
    """Once the work has stopped for a first SIGINT or SIGTERM, the next ones are ignored while what finished is
    reported and the process exits (within a second): a second Ctrl-C would only lose the summary."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)


class Abandonable:
    def __init__(self) -> None:
        self._scopes: set[anyio.CancelScope] = set()
        self.abandoned = False

    def abandon(self) -> None:
        """Cancel the work under way, and any started from now on."""
        self.abandoned = True
        for scope in list(self._scopes):
            scope.cancel()

    @contextlib.contextmanager
    def scope(self) -> Iterator[anyio.CancelScope]:
        """A scope around one piece of work; its `cancelled_caught` says whether it was abandoned."""
        scope = anyio.CancelScope()
        self._scopes.add(scope)
        try:
            if self.abandoned:
                scope.cancel()
            with scope:
                yield scope
        finally:
            self._scopes.discard(scope)
