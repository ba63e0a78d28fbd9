"""Triton's cache key of this installation, computed once per evaluator process by a subprocess of ours (the
evaluator's process never imports Triton) and handed to every worker (see `wire/_triton_key.py`)."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Mapping

import anyio

__all__ = ["triton_key"]

_lock = threading.Lock()
_known: list[str | None] = []  # empty until computed; then the key's JSON, or None where it could not be


def _compute(env: Mapping[str, str]) -> str | None:
    with _lock:
        if not _known:
            done = subprocess.run(
                [sys.executable, "-m", "adaexplore.executor.worker._triton_key"],
                env=dict(env),
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            lines = done.stdout.strip().splitlines()
            # where it cannot be computed, each worker computes Triton's own as it always could (the same key): a
            # broken Triton is reported by the worker that needs it, in its own words
            _known.append(lines[-1] if done.returncode == 0 and lines else None)
        return _known[0]


async def triton_key(env: Mapping[str, str]) -> str | None:
    """The JSON that `python -m adaexplore.executor.worker._triton_key` prints with `env`, computed at the first call
    of this process (the callers meanwhile wait for it); None where it failed."""
    if _known:
        return _known[0]
    return await anyio.to_thread.run_sync(_compute, env)
