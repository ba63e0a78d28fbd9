"""A worker process seen from the evaluator: start, talk, capture its output, kill its whole group."""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager, nullcontext
from pathlib import Path
from typing import Literal

import anyio
from anyio.abc import Process, TaskGroup
from anyio.streams.buffered import BufferedByteReceiveStream

from adaexplore.config import Settings
from adaexplore.executor.host._cgroup import oom_kills
from adaexplore.executor.host._reaper import reaped
from adaexplore.executor.host._sandbox import SandboxPlan
from adaexplore.executor.host._watch import (
    OutputCapture,
    namespace_init,
    process_tree_cpu_seconds,
    process_tree_resident_bytes,
    tree_size,
)
from adaexplore.executor.host._worker_user import hand_over
from adaexplore.executor.wire._protocol import Event, Ready, Started, Warm, decode_event, encode
from adaexplore.executor.wire._side import SideSocket, side_pair
from adaexplore.roofline import DEFAULT_TARGET

__all__ = ["WorkerDied", "WorkerProcess", "WorkerTimeout"]

_MAX_LINE = 64 * 1024 * 1024
_WATCH_S = 0.2


class WorkerDied(Exception):
    """The worker exited (or broke the protocol) while we waited for it."""

    def __init__(self, returncode: int | None, detail: str = "") -> None:
        super().__init__(detail or f"worker exited with code {returncode}")
        self.returncode = returncode
        self.detail = detail


class WorkerTimeout(Exception):
    """The worker sent nothing before the deadline."""


class WorkerProcess:
    """One spawned `python -m adaexplore.executor.worker` process in its own session (process group)."""

    def __init__(
        self,
        process: Process,
        role: str,
        backend: str,
        capture: OutputCapture,
        gate: Callable[[], AbstractAsyncContextManager[object]] | None = None,
        *,
        exchange: Path | None = None,
        wrapped: bool = False,
        side: SideSocket | None = None,
    ) -> None:
        self.process = process
        # the evaluator's end of the worker's side socket, which carries handles of shared GPU memory
        self.side = side
        # the worker's own directory: the only one of the host it may write to
        self.exchange = exchange
        # started through bubblewrap, which reports a child killed by signal N as exit code 128 + N
        self._wrapped = wrapped
        # Held while a GPU worker warms up (it runs kernels), so that no timing is disturbed.
        self._gate = gate
        self.role = role
        self.backend = backend
        self.output = capture
        self._events = BufferedByteReceiveStream(process.stdout)  # type: ignore[arg-type]
        self._ready: Ready | None = None
        self._ready_lock = anyio.Lock()
        self._killed = False
        # the out-of-memory kills its memory cgroup had counted when it started (None: the machine does not say)
        self._oom_kills = oom_kills()
        # why the evaluator killed the worker for the candidate's doing, if it did
        self.violation: str | None = None
        self._disk_limit: int | None = None
        # a pidfd of the first process of bubblewrap's PID namespace (None: not started through bubblewrap)
        self._namespace: int | None = None

    @classmethod
    async def start(
        cls,
        task_group: TaskGroup,
        *,
        role: Literal["candidate", "judge", "synth", "sizes"],
        backend: str,
        device: int,
        env: Mapping[str, str],
        output_limit: int,
        compile_target: str = "cuda:90",
        gate: Callable[[], AbstractAsyncContextManager[object]] | None = None,
        sandbox: SandboxPlan,
        exchange: Path,
        exchange_root: Path,
        settings: Settings,
        memory_budget: int | None = None,
        memory_share: float | None = None,
    ) -> WorkerProcess:
        """Start a worker in `sandbox`, with `exchange` (made here) as the one directory it may write to.

        Raises:
            OSError: the process could not be started.
        """
        exchange.mkdir(mode=0o700)
        if sandbox.user is not None:
            hand_over(sandbox.user, exchange_root, exchange)
        # the GPU a candidate's questions about the device (torch.cuda.get_device_properties) are answered as on the
        # CPU backends; on a GPU the GPU answers
        target_gpu = settings.executor.target_gpu
        command = [
            sys.executable,
            "-P",  # the directory it starts in is not on its import path
            "-m",
            "adaexplore.executor.worker",
            "--role",
            role,
            "--backend",
            backend,
            "--device",
            str(device),
            "--compile-target",
            compile_target,
            "--target-gpu",
            DEFAULT_TARGET if target_gpu == "auto" else target_gpu,
        ]
        ours, theirs = side_pair()
        command += ["--side-fd", str(theirs.fileno())]
        if memory_budget is not None:
            command += ["--memory-budget", str(memory_budget)]
        if memory_share is not None:
            command += ["--memory-share", str(memory_share)]
        command, worker_env, confinement = sandbox.command(
            command,
            dict(env),
            role=role,
            gpu=backend == "cuda",
            exchange=exchange,
            exchange_root=exchange_root,
            settings=settings,
        )
        command += ["--confine", confinement.model_dump_json()]
        passed = [theirs.fileno()]
        info: tuple[int, int] | None = None
        if sandbox.kind == "bwrap":
            # bubblewrap names the first process of the new PID namespace here: the one to kill so that nothing
            # of the namespace survives (its child runs in a session of its own, outside the worker's group)
            info = os.pipe()
            command[1:1] = ["--info-fd", str(info[1])]
            passed.append(info[1])
        # through the launcher that ends the whole tree when this process dies first (`host/_reaper.py`)
        command = reaped(command, os.getpid())
        try:
            # shielded: a start cancelled while the process is being made must still see it made, to kill it
            with anyio.CancelScope(shield=True):
                process = await anyio.open_process(
                    command,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    env=worker_env,
                    cwd=exchange,
                    start_new_session=True,
                    pass_fds=tuple(passed),
                )
        except BaseException:
            ours.close()
            if info is not None:
                os.close(info[0])
            shutil.rmtree(exchange, ignore_errors=True)
            raise
        finally:
            theirs.close()
            if info is not None:
                os.close(info[1])
        worker = cls(
            process,
            role,
            backend,
            OutputCapture(output_limit),
            gate,
            exchange=exchange,
            wrapped=sandbox.kind == "bwrap",
            side=SideSocket(ours),
        )
        try:
            if info is not None:
                # bubblewrap reports at once (or exits); anyio waits for the thread even when the start is cancelled
                # meanwhile, so the namespace to kill is known to the `aclose` below
                worker._namespace = await anyio.to_thread.run_sync(namespace_init, info[0])
            task_group.start_soon(worker._drain)
            if sandbox.kind != "none":
                task_group.start_soon(worker._watch_disk, sandbox.disk_bytes + sandbox.cache_bytes)
            if sandbox.kind != "none" and backend == "cuda" and confinement.memory_bytes is not None:
                # on a GPU the rlimit holds the worker's written memory, and not the pages the CUDA driver pins
                # for it; on the CPU backends the address-space limit holds everything
                task_group.start_soon(worker._watch_memory, confinement.memory_bytes)
        except BaseException:
            await worker.aclose()  # shields itself
            raise
        return worker

    def over_quota(self) -> bool:
        """Whether the worker's directory holds more than its limit now (then it is killed)."""
        if self._disk_limit is None or self.exchange is None or self.violation is not None:
            return self.violation is not None
        used = tree_size(self.exchange)
        if used > self._disk_limit:
            self._stop_for_disk(used)
        return self.violation is not None

    def _stop_for_disk(self, used: int) -> None:
        assert self._disk_limit is not None
        self.violation = (
            f"the candidate wrote {used / 2**20:.0f} MiB to its directory, past the limit of "
            f"{self._disk_limit / 2**20:.0f} MiB (executor.worker_disk_bytes and worker_cache_bytes), and was stopped"
        )
        self.kill()

    async def _watch_disk(self, limit: int) -> None:
        """Kill the worker once its directory holds more than `limit` bytes (a file system quota would need
        privileges the evaluator does not have; the files a worker writes are few, so counting is cheap)."""
        assert self.exchange is not None
        self._disk_limit = limit
        while self.process.returncode is None and not self._killed:
            used = await anyio.to_thread.run_sync(tree_size, self.exchange)
            if used > limit:
                self._stop_for_disk(used)
                return
            await anyio.sleep(_WATCH_S)

    async def _watch_memory(self, limit: int) -> None:
        """Kill the worker once its process tree holds more than `limit` bytes of its own (page-locked pages
        included), read from /proc every `_WATCH_S` seconds."""
        while self.process.returncode is None and not self._killed:
            held = await anyio.to_thread.run_sync(process_tree_resident_bytes, self.process.pid)
            if held is not None and held > limit and self.violation is None:
                self.violation = (
                    f"the candidate held {held / 2**20:.0f} MiB of host memory (page-locked pages included), past "
                    f"its share of {limit / 2**20:.0f} MiB (executor.worker_memory_bytes), and was stopped"
                )
                self.kill()
                return
            await anyio.sleep(_WATCH_S)

    @property
    def pid(self) -> int:
        return self.process.pid

    def cpu_seconds(self) -> float | None:
        return process_tree_cpu_seconds(self.process.pid)

    def oom_killed(self) -> bool | None:
        before = self._oom_kills
        now = oom_kills()
        return None if before is None or now is None else now > before

    @property
    def killed(self) -> bool:
        """Whether the evaluator killed the worker (`kill` or `aclose`)."""
        return self._killed

    async def _drain(self) -> None:
        assert self.process.stderr is not None
        try:
            async for chunk in self.process.stderr:
                self.output.feed(chunk)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return

    async def ready(self, timeout: float) -> Ready:
        """Wait for the worker's Ready message (once)."""
        async with self._ready_lock:
            if self._ready is None:
                event = await self.receive(timeout)
                if isinstance(event, Started):
                    async with self._gate() if self._gate is not None else nullcontext():
                        await self.send(Warm())
                        event = await self.receive(timeout)
                if not isinstance(event, Ready):
                    raise WorkerDied(self.returncode, f"expected ready, got {event.kind}")
                self._ready = event
            return self._ready

    async def send(self, message: object) -> None:
        assert self.process.stdin is not None
        try:
            await self.process.stdin.send(encode(message))  # type: ignore[arg-type]
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise WorkerDied(self.returncode, "the worker stopped reading commands") from exc

    async def receive(self, timeout: float) -> Event:
        """The next event.

        Raises:
            WorkerTimeout: nothing arrived within `timeout` seconds.
            WorkerDied: the worker exited or wrote something that is not a message.
        """
        line = b""
        with anyio.move_on_after(timeout if math.isfinite(timeout) else None) as scope:
            try:
                line = await self._events.receive_until(b"\n", _MAX_LINE)
            except (
                anyio.EndOfStream,
                anyio.IncompleteRead,
                anyio.ClosedResourceError,
                anyio.BrokenResourceError,
            ) as exc:
                await self._reap()
                raise WorkerDied(self.returncode) from exc
            except anyio.DelimiterNotFound as exc:
                raise WorkerDied(self.returncode, "the worker wrote an oversized message") from exc
        if scope.cancelled_caught:
            raise WorkerTimeout
        try:
            return decode_event(line)
        except ValueError as exc:
            raise WorkerDied(self.returncode, f"the worker broke the protocol: {line[:200]!r}") from exc

    async def _reap(self) -> None:
        with anyio.move_on_after(5):
            await self.process.wait()

    def kill(self) -> None:
        """SIGKILL the worker's whole process group (its launcher, and anything it started dies with it) and,
        under bubblewrap, the first process of its PID namespace, whose end takes every process of the namespace
        with it."""
        if self._killed:
            return
        self._killed = True
        if self._namespace is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                signal.pidfd_send_signal(self._namespace, signal.SIGKILL)
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    async def aclose(self) -> None:
        """Kill, reap and close, and remove the worker's directory; safe to call more than once, and under
        cancellation."""
        with anyio.CancelScope(shield=True):
            self.kill()
            await self._reap()
            await self.process.aclose()
            if self.side is not None:
                self.side.close()
            if self._namespace is not None:
                os.close(self._namespace)
                self._namespace = None
            if self.exchange is not None:
                shutil.rmtree(self.exchange, ignore_errors=True)

    @property
    def returncode(self) -> int | None:
        """The worker's exit code; negative: the signal that killed it."""
        code = self.process.returncode
        if self._wrapped and code is not None and code > 128:
            return -(code - 128)
        return code
