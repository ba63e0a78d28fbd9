"""What the evaluator keeps of a worker from outside: the head and tail of what it writes, the size of its
exchange directory, and a handle on the first process of its PID namespace."""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["OutputCapture", "namespace_init", "tree_size"]


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
