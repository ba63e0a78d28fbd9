"""Where a worker was when it ran out of time: it writes every thread's Python stack to its stderr on
`STACK_SIGNAL` (`worker.__main__`), which the evaluator sends it before it kills it."""

from __future__ import annotations

import contextlib
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

import anyio

from adaexplore.executor.host._process import WorkerProcess
from adaexplore.executor.host._reaper import SCRIPT
from adaexplore.executor.host._spawn import WorkerChannel
from adaexplore.executor.wire._signals import STACK_SIGNAL

__all__ = ["Frame", "sample_stack", "thread_stacks", "worker_pids"]

_HEADER = "(most recent call first)"
_FRAME = re.compile(r'^\s+File "(?P<path>[^"]*)", line (?P<line>\d+) in (?P<name>\S+)', re.MULTILINE)
_WORKER = "adaexplore.executor.worker"
# the launcher above the sandbox names the worker's command too, but is no worker
_LAUNCHER = str(SCRIPT).encode()
# how long a worker has to write its stack (a busy machine may not run it at once), and how long its output must
# stay still to count as written
_WAIT_S = 2.0
_STILL_S = 0.1


@dataclass(frozen=True)
class Frame:
    path: str
    line: int
    name: str


def worker_pids(root: int) -> list[int]:
    """The Python worker processes in the tree under `root` (our launcher, bubblewrap's and the first process of
    its namespace run the worker as their child; a compiler the worker runs is not one)."""
    found: list[int] = []
    pending, seen = [root], set()
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        try:
            argv = Path(f"/proc/{current}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if _WORKER.encode() in argv and not argv[0].endswith(b"bwrap") and _LAUNCHER not in argv:
            found.append(current)
        tasks = Path(f"/proc/{current}/task")
        with contextlib.suppress(OSError):
            for tid in tasks.iterdir():
                with contextlib.suppress(OSError, ValueError):
                    pending += [int(c) for c in (tid / "children").read_text().split()]
    return found


async def sample_stack(worker: WorkerChannel) -> str | None:
    """The stacks a running worker writes when asked (`STACK_SIGNAL`), or None where it cannot be asked or wrote none in
    time. Only a real worker process can be asked."""
    if not isinstance(worker, WorkerProcess) or worker.returncode is not None or worker.killed:
        return None
    fed = worker.output.fed
    pids = worker_pids(worker.pid)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, STACK_SIGNAL)
    if not pids:
        return None
    deadline = time.monotonic() + _WAIT_S
    seen, still = -1, time.monotonic()
    while time.monotonic() < deadline:
        await anyio.sleep(0.02)
        now = worker.output.fed
        if now != seen:
            seen, still = now, time.monotonic()
        elif _HEADER in worker.output.since(fed) and time.monotonic() - still >= _STILL_S:
            break
    text = worker.output.since(fed)
    return text if _HEADER in text else None


def thread_stacks(stack: str) -> list[list[Frame]]:
    """Each thread's frames in a written stack, innermost first."""
    return [
        [Frame(m["path"], int(m["line"]), m["name"]) for m in _FRAME.finditer(block)]
        for block in stack.split(_HEADER)[1:]
    ]
