"""What the evaluator needs of a worker: the `WorkerChannel` protocol, and the spawner that makes workers.

`WorkerProcess` (a real, sandboxed subprocess) is the one channel in production; a test may hand the
evaluator a spawner of its own whose channels answer commands from a script, with no process at all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from anyio.abc import TaskGroup

from adaexplore.config import Settings
from adaexplore.executor.host._sandbox import SandboxPlan
from adaexplore.executor.host._triton_key import triton_key
from adaexplore.executor.host._watch import pin_process_tree
from adaexplore.executor.wire._protocol import Event, Ready
from adaexplore.executor.wire._side import SideSocket
from adaexplore.executor.wire._triton_key import TRITON_KEY_ENV

__all__ = [
    "OutputText",
    "ProcessSpawner",
    "SpawnRequest",
    "Spawner",
    "WorkerChannel",
]


class OutputText(Protocol):
    def text(self) -> str:
        """What the worker wrote to stdout and stderr (head and tail, within the output limit)."""
        ...


@runtime_checkable
class WorkerChannel(Protocol):
    """One worker (a candidate's or a judge) as the evaluator talks to it.

    Raises of `send`, `receive` and `ready`: `WorkerDied` (it exited or broke the protocol) and
    `WorkerTimeout` (nothing arrived in time), both from `adaexplore.executor.host._process`.
    """

    role: str
    backend: str
    # the worker's own directory, where the candidate is written and outputs are read; None: it has none
    exchange: Path | None

    @property
    def output(self) -> OutputText: ...

    # why the evaluator stopped the worker for the candidate's doing (past its disk quota), if it did
    violation: str | None
    # the socket that carries handles of shared GPU memory; None: the worker has none (tensors go as files)
    side: SideSocket | None

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None:
        """The exit code once it exited; negative: the signal that killed it."""
        ...

    @property
    def killed(self) -> bool:
        """Whether the evaluator itself killed it (a SIGKILL it then dies of is the evaluator's doing)."""
        ...

    async def ready(self, timeout: float) -> Ready: ...

    async def send(self, message: object) -> None: ...

    async def receive(self, timeout: float) -> Event: ...

    def over_quota(self) -> bool:
        """Whether its directory holds more than its limit now (then it is stopped, with `violation` set)."""
        ...

    def cpu_seconds(self) -> float | None:
        """The CPU time its processes have used so far, read by this process from the system (the worker's own
        code cannot change it); None where it cannot be read."""
        ...

    def oom_killed(self) -> bool | None:
        """Once it died: whether the kernel's out-of-memory killer killed a process since it started (its memory
        cgroup counted one more kill); None where the machine does not say."""
        ...

    async def aclose(self) -> None:
        """Kill it (its whole process group), reap it and remove its directory; safe to call twice."""
        ...


@dataclass(frozen=True)
class SpawnRequest:
    """One worker to start."""

    role: Literal["candidate", "judge", "synth", "sizes"]
    backend: str
    device: int
    env: Mapping[str, str]
    exchange: Path
    # held while a GPU worker runs the device part of its start-up
    gate: Callable[[], AbstractAsyncContextManager[object]] | None = None
    # the cores it may run on; None: any
    cpus: frozenset[int] | None = None


class Spawner(Protocol):
    async def spawn(self, request: SpawnRequest) -> WorkerChannel: ...

    def pin(self, worker: WorkerChannel, cpus: frozenset[int]) -> None:
        """Move a running worker (every thread of every process it started) onto `cpus`."""
        ...


class ProcessSpawner:
    """Starts real sandboxed worker processes (`WorkerProcess`), the evaluator's default."""

    def __init__(self, task_group: TaskGroup, *, sandbox: SandboxPlan, exchange_root: Path, settings: Settings) -> None:
        self._tg = task_group
        self._sandbox = sandbox
        self._exchange_root = exchange_root
        self._settings = settings

    async def spawn(self, request: SpawnRequest) -> WorkerChannel:
        from adaexplore.executor.host._process import WorkerProcess

        env = dict(request.env)
        key = await triton_key(request.env, self._settings.cache_dir)
        if key is not None:
            env[TRITON_KEY_ENV] = key
        worker = await WorkerProcess.start(
            self._tg,
            role=request.role,
            backend=request.backend,
            device=request.device,
            env=env,
            output_limit=self._settings.executor.output_limit_bytes,
            gate=request.gate,
            sandbox=self._sandbox,
            exchange=request.exchange,
            exchange_root=self._exchange_root,
            settings=self._settings,
            memory_budget=self._settings.executor.judge_memory_bytes if request.role == "judge" else None,
            memory_share=self._settings.executor.judge_memory_share if request.role == "judge" else None,
        )
        if request.cpus is not None:
            try:
                self.pin(worker, request.cpus)
            except BaseException:
                await worker.aclose()
                raise
        return worker

    def pin(self, worker: WorkerChannel, cpus: frozenset[int]) -> None:
        pin_process_tree(worker.pid, cpus)
