"""When the worker is inside Triton's compiler. The evaluator charges the candidate's budget with the time its own
code runs, not the time its kernels take to compile for sm_90 (an autotuner's configs are the compiler's work),
so each compile's start and end are told to it as they happen (`listen`)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

__all__ = ["compiling", "listen"]

_listener: Callable[[str | None], None] | None = None
_depth = 0


def listen(callback: Callable[[str | None], None] | None) -> None:
    """`callback(name)` as a compile of kernel `name` starts, `callback(None)` as it ends (nested compiles, a
    kernel's callees, count once)."""
    global _listener
    _listener = callback


@contextlib.contextmanager
def compiling(name: str) -> Iterator[None]:
    global _depth
    _depth += 1
    if _depth == 1 and _listener is not None:
        _listener(name)
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0 and _listener is not None:
            _listener(None)
