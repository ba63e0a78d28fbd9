"""What the caller tells a worker to apply to itself before it is handed a candidate (see `worker/confine/_confine.py`,
and the sandbox that chose it in `host/_sandbox.py`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["Confinement", "SandboxKind"]

SandboxKind = Literal["bwrap", "landlock+seccomp", "none"]


class Confinement(BaseModel):
    """What a worker applies to itself before it is handed a candidate (see `worker/confine/_confine.py`)."""

    model_config = ConfigDict(extra="forbid")

    kind: SandboxKind
    readable: list[str] = []
    writable: list[str] = []
    executable: list[str] = []
    memory_bytes: int | None = None
    file_bytes: int | None = None
    seccomp: bool = False
    # under bubblewrap: Landlock also holds reads to `readable` (the kernel has it)
    restrict_reads: bool = False
    # the unprivileged user (and group of the same number) the worker becomes first (`worker/confine/_user.py`)
    user: int | None = None
