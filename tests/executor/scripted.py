"""An in-process worker that answers the evaluator's commands from a script: a real `WorkerChannel`, with no
process behind it, so that the evaluator's handling of every way a worker can fail is tested in milliseconds.

A script maps a command's `kind` ("run", "proceed", "time", "load", "prepare", "compare", ...) to what the
worker does when it gets that command: a list of events to send back, `Die(...)` to end there as a process
would (killed by a signal, or exited), or `Hang()` to go silent. Commands the script leaves out get the
answers of a healthy worker.
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from adaexplore.domain import Stats, Tolerance, TrialResult
from adaexplore.executor.host._environment import Environment
from adaexplore.executor.host._process import WorkerDied, WorkerTimeout
from adaexplore.executor.host._sandbox import SandboxPlan
from adaexplore.executor.host._spawn import SpawnRequest, WorkerChannel
from adaexplore.executor.wire._protocol import (
    Compared,
    Compiled,
    Done,
    Event,
    Load,
    Loaded,
    MemoryReport,
    Prepared,
    Ready,
    ReferenceTimed,
    SharedInputs,
    Timed,
    TrialsDone,
)
from adaexplore.executor.wire._side import SideSocket, side_pair
from adaexplore.roofline import ForwardWork, TaskWork

__all__ = ["Die", "Hang", "Pause", "ScriptedSpawner", "ScriptedWorker", "Turns", "fake_environment", "no_sandbox"]

TRIALS = 5
# the device a scripted judge reports, and what it says a task's reference does at full size: an evaluation of
# it reserves a few GiB (pipeline/stages/footprint.py), so that several fit side by side
DEVICE_BYTES = 80 << 30
SMALL_WORK = TaskWork(forward=ForwardWork(), input_bytes=1 << 20, parameter_bytes=1 << 20, output_bytes=1 << 20)


@dataclass(frozen=True)
class Die:
    """End the worker: killed by `signal` (a negative return code) or exited with `code`."""

    signal: int | None = None
    code: int = 1
    output: str = ""
    # the evaluator had killed it (as it does past the disk quota) before it was seen to die
    by_evaluator: bool = False
    # what the machine's memory cgroup says of an out-of-memory kill meanwhile (None: it says nothing)
    oom_killed: bool | None = None

    @property
    def returncode(self) -> int:
        return -self.signal if self.signal is not None else self.code


@dataclass(frozen=True)
class Hang:
    """Send nothing more (a worker stuck in a loop, or a judge that stopped answering)."""


@dataclass(frozen=True)
class Pause:
    """Send the next step only after `seconds` (a long compile, a slow kernel)."""

    seconds: float


Step = Event | Die | Hang | Pause


@dataclass(frozen=True)
class Turns:
    """Answers that change from one command of a kind to the next: the n-th such command gets `answers[n]`, and
    those after the last a healthy worker's."""

    answers: tuple[Sequence[Step], ...]


Script = dict[str, Sequence[Step] | Turns]


def _stats(ms: float) -> Stats:
    return Stats(n=30, median_ms=ms, mean_ms=ms, std_ms=0.0, min_ms=ms, max_ms=ms, p10_ms=ms, p90_ms=ms)


def healthy(role: str, kind: str, backend: str) -> list[Step]:
    """What a worker whose candidate (or task) is correct answers to a command of `kind`."""
    if role == "judge":
        answers: dict[str, list[Step]] = {
            "load": [Loaded()],
            "prepare": [
                Prepared(
                    init_seed=1,
                    trial_seeds=list(range(TRIALS)),
                    timing_seed=7,
                    tolerances=[
                        Tolerance(kind="allclose", atol=1e-5, rtol=1e-5, dtype="float32", reference_dtype="float64")
                    ],
                )
            ],
            "compare": [Compared(results=[TrialResult(index=i, seed=i, passed=True) for i in range(TRIALS)])],
            "time_reference": [ReferenceTimed(stats=_stats(2.0))],
            "memory": [
                MemoryReport(
                    judge="cuda:0",
                    budget_bytes=1 << 30,
                    cached_bytes=1 << 20,
                    entries=1,
                    total_bytes=DEVICE_BYTES,
                    work=SMALL_WORK,
                )
            ],
        }
        return answers.get(kind, [Done()])
    compiled = Compiled(kernels=["k"], load_s=0.01, compile_s=0.01)
    answers = {
        "run": [compiled, Done()] if backend == "compile" else [compiled],
        "proceed": [TrialsDone(outputs=[], triton_launches=1, triton_kernels=["k"], trial_s=0.01)],
        "time": [Timed(stats=_stats(1.0), method="cuda_events", host_bound_calls=0)],
    }
    return answers.get(kind, [])


class _Output:
    def __init__(self) -> None:
        self.written = ""

    def text(self) -> str:
        return self.written


class ScriptedWorker:
    """One scripted worker (see the module's docstring)."""

    def __init__(
        self, request: SpawnRequest, script: Script, pid: int, ready_delay: float = 0.0, sides: bool = False
    ) -> None:
        self.role = request.role
        self.backend = request.backend
        self.device = request.device
        self.cpus = request.cpus
        self.exchange: Path | None = request.exchange
        request.exchange.mkdir(mode=0o700)
        self.output = _Output()
        self.violation: str | None = None
        # With `sides`, a real socket pair: the evaluator's end, and the worker's (`peer`). A judge then shares
        # its inputs (a descriptor of /dev/null stands for the buffer), so jobs take the device path.
        self.side: SideSocket | None = None
        self.peer: SideSocket | None = None
        if sides:
            ours, theirs = side_pair()
            self.side, self.peer = SideSocket(ours), SideSocket(theirs)
        # the script ended the process at the last command (its events before the end can still be read)
        self._ended = False
        self.received: list[object] = []
        self._script = script
        self._pid = pid
        self._ready_at = time.monotonic() + ready_delay
        self._queue: list[Step] = []
        self._arrived = anyio.Event()
        self._returncode: int | None = None
        self._killed = False
        self._oom_killed: bool | None = None

    @property
    def pid(self) -> int:
        return self._pid

    @property
    def returncode(self) -> int | None:
        return self._returncode

    @property
    def killed(self) -> bool:
        return self._killed

    async def ready(self, timeout: float) -> Ready:
        wait = self._ready_at - time.monotonic()
        if wait > timeout:
            await anyio.sleep(timeout)
            raise WorkerTimeout
        await anyio.sleep(max(wait, 0.0))
        return Ready(pid=self._pid, startup_s=0.0, versions={"python": "3.11", "gpu": "Scripted GPU"})

    async def send(self, message: object) -> None:
        if self._returncode is not None:
            raise WorkerDied(self._returncode, "the worker stopped reading commands")
        if self._ended:
            raise WorkerDied(None, "the worker stopped reading commands")
        kind = getattr(message, "kind", "")
        turn = sum(1 for m in self.received if getattr(m, "kind", "") == kind)
        self.received.append(message)
        scripted = self._script.get(kind)
        if isinstance(scripted, Turns):
            scripted = scripted.answers[turn] if turn < len(scripted.answers) else None
        steps = list(scripted) if scripted is not None else healthy(self.role, kind, self.backend)
        if self.peer is not None and self.role == "judge" and isinstance(message, Load):
            fd = os.open(os.devnull, os.O_RDONLY)
            self.peer.send_fd(fd, f"{message.job.job_id}:inputs")
            os.close(fd)
            steps = [Loaded(inputs=SharedInputs(nbytes=256, trials=[[] for _ in range(TRIALS)], timing=[]))]
        if any(isinstance(step, Die) for step in steps):
            self._ended = True  # as a process that exits: it reads nothing more, and its socket closes
            if self.peer is not None:
                self.peer.close()
        self._queue.extend(steps)
        self._arrived.set()

    async def receive(self, timeout: float) -> Event:
        with anyio.move_on_after(timeout if math.isfinite(timeout) else None):
            while True:
                if self._returncode is not None:
                    raise WorkerDied(self._returncode)
                if self._queue and isinstance(self._queue[0], Pause):
                    await anyio.sleep(self._queue.pop(0).seconds)  # type: ignore[union-attr]
                    continue
                if self._queue and not isinstance(self._queue[0], Hang):
                    step = self._queue.pop(0)
                    if isinstance(step, Die):
                        self._returncode = step.returncode
                        self._killed = step.by_evaluator
                        self._oom_killed = step.oom_killed
                        self.output.written += step.output
                        raise WorkerDied(self._returncode)
                    return step
                self._arrived = anyio.Event()
                await self._arrived.wait()
        raise WorkerTimeout

    def over_quota(self) -> bool:
        return self.violation is not None

    def cpu_seconds(self) -> float | None:
        return None  # no process: budgets count wall time

    def oom_killed(self) -> bool | None:
        return self._oom_killed

    async def aclose(self) -> None:
        if self._returncode is None:
            self._killed = True
            self._returncode = -signal.SIGKILL
        if self.exchange is not None:
            shutil.rmtree(self.exchange, ignore_errors=True)
        if self.side is not None:  # the worker's own end stays open for a test to read what reached it
            self.side.close()


@dataclass
class ScriptedSpawner:
    """Hands out scripted workers: the n-th candidate (judge) it starts follows `candidates[n]` (`judges[n]`),
    and a healthy script once those run out."""

    candidates: list[Script] = field(default_factory=list)
    judges: list[Script] = field(default_factory=list)
    # the script of every judge of a device, by device (before `judges`)
    device_judges: dict[int, Script] = field(default_factory=dict)
    # seconds each candidate worker takes to become ready (a worker starting up)
    ready_delay: float = 0.0
    started: list[ScriptedWorker] = field(default_factory=list)
    pins: list[tuple[ScriptedWorker, frozenset[int]]] = field(default_factory=list)
    # workers with side sockets: jobs on a GPU take the device path
    sides: bool = False

    def of(self, role: str) -> list[ScriptedWorker]:
        return [w for w in self.started if w.role == role]

    async def spawn(self, request: SpawnRequest) -> WorkerChannel:
        scripts = self.candidates if request.role == "candidate" else self.judges
        script = scripts[len(self.of(request.role))] if len(self.of(request.role)) < len(scripts) else {}
        if request.role == "judge" and request.device in self.device_judges:
            script = self.device_judges[request.device]
        delay = self.ready_delay if request.role == "candidate" else 0.0
        # pids past the kernel's largest (4194304), so that none is a real process
        worker = ScriptedWorker(
            request, script, pid=10_000_000 + len(self.started), ready_delay=delay, sides=self.sides
        )
        self.started.append(worker)
        return worker

    def pin(self, worker: WorkerChannel, cpus: frozenset[int]) -> None:
        assert isinstance(worker, ScriptedWorker)
        self.pins.append((worker, cpus))


def fake_environment(gpus: int = 1) -> Environment:
    return Environment(
        python="3.11.9",
        torch="2.5.0",
        triton="3.1.0",
        numpy="2.0.0",
        cuda="12.4" if gpus else None,
        driver="550.0" if gpus else None,
        gpus=["Scripted GPU"] * gpus,
    )


def no_sandbox() -> SandboxPlan:
    return SandboxPlan(kind="none", memory_bytes=1 << 30, cache_bytes=1 << 30, disk_bytes=1 << 30)
