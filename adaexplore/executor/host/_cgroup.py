"""What the kernel's memory cgroup says of out-of-memory kills: the one witness, besides the evaluator itself,
of who sent a worker the SIGKILL it died of."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["oom_kills"]

_ROOT = Path("/sys/fs/cgroup")


def _counter(path: Path) -> int | None:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition(" ")
        if key == "oom_kill" and value.strip().isdigit():
            return int(value)
    return None


def oom_kills(pid: int | None = None) -> int | None:
    """How many processes of `pid`'s memory cgroup (this process's by default) the out-of-memory killer has
    killed so far: `oom_kill` of cgroup v2's `memory.events`, or of v1's `memory.oom_control`. None where the
    machine does not say (no memory cgroup, or one this process cannot read)."""
    try:
        lines = Path(f"/proc/{pid or os.getpid()}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        relative = path.lstrip("/")
        if "memory" in controllers.split(","):
            found = _counter(_ROOT / "memory" / relative / "memory.oom_control")
            if found is not None:
                return found
        elif controllers == "":
            found = _counter(_ROOT / relative / "memory.events")
            if found is not None:
                return found
    return None
