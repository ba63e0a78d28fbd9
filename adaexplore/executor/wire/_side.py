"""The side socket beside each worker's pipes: it carries file descriptors (handles of shared GPU memory).

The evaluator keeps one end of a Unix socket pair per worker and the worker inherits the other, before its
sandbox forbids making sockets. Each record is one descriptor and a tag naming the job and what it is (a
judge serves several evaluations at once, so the evaluator's end sorts what arrives by tag). The message on
the pipe that needs a descriptor is sent after it.
"""

from __future__ import annotations

import os
import socket

import anyio

__all__ = ["SideSocket", "side_pair"]

_MAX_TAG = 128


def side_pair() -> tuple[socket.socket, socket.socket]:
    """(the evaluator's end, the worker's end, inheritable)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    theirs.set_inheritable(True)
    return ours, theirs


class SideSocket:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        # descriptors that arrived for a tag nobody has asked for yet
        self._arrived: dict[str, int] = {}
        self._lock = anyio.Lock()

    @classmethod
    def inherited(cls, fd: int) -> SideSocket:
        """The worker's end, descriptor `fd`, as the evaluator passed it."""
        return cls(socket.socket(fileno=fd))

    def send_fd(self, fd: int, tag: str) -> None:
        socket.send_fds(self.sock, [tag.encode()], [fd])

    def _receive(self) -> tuple[str, int]:
        message, fds, _, _ = socket.recv_fds(self.sock, _MAX_TAG, 1)
        if len(fds) != 1 or not message:
            for fd in fds:
                os.close(fd)
            raise ConnectionError("the side socket is closed, or carried no descriptor")
        return message.decode(errors="replace"), fds[0]

    def receive_fd(self, tag: str) -> int:
        """The descriptor sent with `tag` (blocks until it comes; others that come first are closed: a worker
        receives only what its one evaluation sends it).

        Raises:
            ConnectionError: the other end is gone.
        """
        while True:
            got, fd = self._receive()
            if got == tag:
                return fd
            os.close(fd)

    async def take_fd(self, tag: str, timeout: float) -> int:
        """The descriptor sent with `tag`, without blocking the event loop; descriptors of other tags that
        arrive meanwhile are kept for whoever asks for them.

        Raises:
            TimeoutError: it did not come within `timeout`.
            ConnectionError: the other end is gone.
        """
        with anyio.fail_after(timeout):
            while tag not in self._arrived:
                async with self._lock:
                    if tag in self._arrived:
                        break
                    await anyio.wait_readable(self.sock)
                    got, fd = self._receive()
                    stale = self._arrived.pop(got, None)
                    if stale is not None:
                        os.close(stale)
                    self._arrived[got] = fd
        return self._arrived.pop(tag)

    def discard(self, prefix: str) -> None:
        """Close the descriptors kept for tags starting with `prefix` (a job that ended before taking them)."""
        for tag in [t for t in self._arrived if t.startswith(prefix)]:
            os.close(self._arrived.pop(tag))

    async def asend_fd(self, fd: int, tag: str, timeout: float = 10.0) -> None:
        with anyio.fail_after(timeout):
            await anyio.wait_writable(self.sock)
        self.send_fd(fd, tag)

    def close(self) -> None:
        self.discard("")
        self.sock.close()
