"""One GPU, one measurement at a time: within this process and across the processes of this machine.

The MCP server, a headless `adaexplore explore` and a benchmark may all evaluate on the same GPU. Their
trials and timing must not overlap, or each slows the other's kernels and the speedups lie. A `DeviceLock`
is an anyio lock for the evaluations of this process, then an advisory `flock` on a file named for the
physical GPU, which every adaexplore process on the machine takes before it touches that GPU. The kernel
drops a `flock` when its holder dies, so a killed process never leaves the GPU locked.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from pathlib import Path
from types import TracebackType

import anyio

from adaexplore.errors import ConfigError

__all__ = ["DeviceLock", "default_lock_dir", "physical_gpu"]

_POLL_START_S = 0.002
_POLL_MAX_S = 0.05


def default_lock_dir() -> Path:
    """Where the lock files live unless `executor.device_lock_dir` says otherwise: one place per machine."""
    return Path(tempfile.gettempdir()) / "adaexplore-device-locks"


def physical_gpu(device: int, env: dict[str, str]) -> str:
    """The name of visible device `device` that every process on the machine agrees on: its entry in
    CUDA_VISIBLE_DEVICES (an index or a UUID) when that is set, else its index."""
    visible = [v.strip() for v in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    return visible[device] if device < len(visible) else str(device)


class DeviceLock:
    """Held while a GPU runs candidate or reference code that must not share it. Use `async with`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = anyio.Lock()
        self._fd: int | None = None

    async def __aenter__(self) -> DeviceLock:
        await self.acquire()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()

    async def acquire(self) -> None:
        """Wait for this process's other evaluations, then for other processes. Cancellable while waiting.

        Raises:
            ConfigError: the lock file cannot be created or opened (the directory is not writable).
        """
        await self._local.acquire()
        try:
            self._fd = await self._lock_file()
        except BaseException:
            self._local.release()
            raise

    def release(self) -> None:
        fd, self._fd = self._fd, None
        try:
            if fd is not None:
                with contextlib.suppress(OSError):
                    fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
        finally:
            self._local.release()

    def holder(self) -> str | None:
        """The pid written by the process that holds (or last held) the file lock, if any."""
        try:
            text = self.path.read_text().strip()
        except OSError:
            return None
        return text or None

    async def _lock_file(self) -> int:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(OSError):
                self.path.parent.chmod(0o1777)  # shared by every user of the machine, as /tmp is
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise ConfigError(
                f"cannot open the GPU lock file {self.path} ({exc.strerror}); set executor.device_lock_dir "
                "to a directory every adaexplore process on this machine can write"
            ) from exc
        delay = _POLL_START_S
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    await anyio.sleep(delay)
                    delay = min(delay * 2, _POLL_MAX_S)
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        return fd
