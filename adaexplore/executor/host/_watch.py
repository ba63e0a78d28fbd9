"""What the evaluator keeps of a worker from outside: the head and tail of what it writes, the size of its
exchange directory, a handle on the first process of its PID namespace, and its process tree in /proc (the CPU
time it used, the cores it may run on)."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

__all__ = [
    "OutputCapture",
    "namespace_init",
    "pin_process_tree",
    "process_tree_cpu_seconds",
    "process_tree_resident_bytes",
    "tree_size",
]


class OutputCapture:
    """Keeps the first and last `limit` bytes a process writes, and counts the rest."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, chunk: bytes) -> None:
        room = self.limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            excess = len(self.tail) - self.limit
            if excess > 0:
                del self.tail[:excess]
                self.dropped += excess

    @property
    def fed(self) -> int:
        """Bytes written so far, kept or not."""
        return len(self.head) + len(self.tail) + self.dropped

    def since(self, fed: int) -> str:
        """What was written after the first `fed` bytes, as far as it is kept."""
        kept = bytes(self.head) + bytes(self.tail)
        new = self.fed - fed
        return kept[-new:].decode(errors="replace") if new > 0 else ""

    def text(self) -> str:
        body = self.head.decode(errors="replace")
        if self.dropped:
            body += f"\n… [{self.dropped} bytes not kept] …\n"
        return body + self.tail.decode(errors="replace")


def tree_size(root: Path) -> int:
    total = 0
    pending = [str(root)]
    while pending:
        try:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            pending.append(entry.path)
                        else:
                            total += entry.stat(follow_symlinks=False).st_blocks * 512
                    except OSError:  # removed while counting
                        continue
        except OSError:
            continue
    return total


def namespace_init(fd: int) -> int | None:
    """A pidfd of the process bubblewrap reports on its info pipe (`child-pid`), read to its end; None when it
    exited before reporting one (its exit code and output then say why)."""
    chunks = []
    try:
        while chunk := os.read(fd, 4096):
            chunks.append(chunk)
    finally:
        os.close(fd)
    try:
        pid = int(json.loads(b"".join(chunks) or b"{}").get("child-pid", 0))
    except (ValueError, AttributeError):
        return None
    if pid <= 0:
        return None
    try:
        return os.pidfd_open(pid)
    except ProcessLookupError:
        return None


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _descendants(pid: int) -> list[int]:
    """`pid` and every descendant it has now, as far as /proc shows them."""
    pending, seen = [pid], {pid: None}  # a dict: the order found, and a quick `in`
    while pending:
        current = pending.pop()
        with contextlib.suppress(OSError):
            for tid in Path(f"/proc/{current}/task").iterdir():
                with contextlib.suppress(OSError, ValueError):
                    for child in (int(c) for c in (tid / "children").read_text().split()):
                        if child not in seen:
                            seen[child] = None
                            pending.append(child)
    return list(seen)


def process_tree_cpu_seconds(pid: int) -> float | None:
    """User and system CPU time of `pid` and of every descendant it has now (a sandbox's launcher runs the worker as
    its child, and the worker runs the compilers), with what their exited children used; None where /proc does not
    show `pid`."""
    ticks, found = 0, False
    for current in _descendants(pid):
        try:
            stat = Path(f"/proc/{current}/stat").read_text()
            # the fields after the command name, which is in parentheses and may hold anything
            fields = stat[stat.rindex(")") + 2 :].split()
            ticks += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
            found = True
        except (OSError, ValueError, IndexError):
            continue
    return ticks / _TICKS if found else None


def process_tree_resident_bytes(pid: int) -> int | None:
    """The memory `pid` and its descendants hold of their own now: the resident anonymous and shared pages of each
    (RssAnon and RssShmem of /proc/PID/status), their libraries' file pages left out. Pages the CUDA driver pins for
    a process (cudaHostAlloc, cuMemHostAlloc) count here and in no rlimit of the process (measured with
    benchmarks/pinned_probe.py). None where /proc does not show `pid`."""
    total, found = 0, False
    for current in _descendants(pid):
        try:
            lines = Path(f"/proc/{current}/status").read_text().splitlines()
        except OSError:
            continue
        found = True
        for line in lines:
            key, _, value = line.partition(":")
            if key in ("RssAnon", "RssShmem"):
                with contextlib.suppress(ValueError, IndexError):
                    total += int(value.split()[0]) * 1024
    return total if found else None


def pin_process_tree(pid: int, cpus: frozenset[int]) -> None:
    """Set the CPU affinity of every thread of `pid` and of its descendants (a sandbox's launcher runs the
    worker as its child). Threads and processes made later inherit it. Best effort: one that exited meanwhile,
    or that this process may not change, is skipped."""
    pending, seen = [pid], set()
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        tasks = Path(f"/proc/{current}/task")
        try:
            tids = [int(t.name) for t in tasks.iterdir()]
        except OSError:
            continue
        for tid in tids:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(tid, cpus)
            with contextlib.suppress(OSError, ValueError):
                pending += [int(c) for c in (tasks / str(tid) / "children").read_text().split()]
