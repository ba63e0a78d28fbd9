"""The lanes of a started evaluator (see `stages/lane.py`): per backend and device a pool of candidate workers
and the slot that bounds how many evaluations hold one; per GPU (or the CPU) a judge; per GPU the lock that
every adaexplore process on this machine shares; and which device a backend's next evaluation takes.

`LaneBook` is what the stages are handed (it implements `Lanes`); the evaluator keeps its lifecycle, the retry
of its own failures, and the words of a verdict.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import anyio
from anyio.abc import TaskGroup

from adaexplore.config import ExecutorConfig, Settings
from adaexplore.domain import Backend
from adaexplore.errors import ConfigError
from adaexplore.executor.host import _workspace as workspace
from adaexplore.executor.host._device_lock import DeviceLock, default_lock_dir, physical_gpu
from adaexplore.executor.host._environment import Environment
from adaexplore.executor.host._gpu_memory import GpuMemory
from adaexplore.executor.host._pool import CorePlan, JudgeClient, WorkerPool
from adaexplore.executor.host._spawn import Spawner, SpawnRequest, WorkerChannel
from adaexplore.executor.pipeline import _jobs as jobs
from adaexplore.executor.pipeline.stages.ahead import SeedsAhead
from adaexplore.executor.pipeline.stages.context import Run
from adaexplore.executor.pipeline.stages.lane import Lane
from adaexplore.executor.tasks._task import Task
from adaexplore.executor.wire._protocol import JobSpec, MemoryQuery

__all__ = ["LaneBook"]


class LaneBook:
    """The lanes of one evaluator, made once it has started: this machine's environment, the spawner of its
    workers, the cores each may use, and the directory that holds every worker's exchange and the tasks."""

    def __init__(
        self,
        *,
        group: TaskGroup,
        settings: Settings,
        environment: Environment,
        spawner: Spawner,
        cores: CorePlan,
        warm: int,
        worker_env: dict[str, str],
        exchange: Path,
        wait_warm: Callable[[], Awaitable[None]],
    ) -> None:
        self.group, self.settings, self.environment = group, settings, environment
        self.spawner, self.cores, self.warm = spawner, cores, warm
        self.worker_env, self.exchange, self.wait_warm = worker_env, exchange, wait_warm
        self.pools: dict[tuple[Backend, int], WorkerPool] = {}
        self.judges: dict[str, JudgeClient] = {}
        self.slots: dict[tuple[Backend, int], anyio.Semaphore] = {}
        self.locks: dict[int, DeviceLock] = {}
        self.memories: dict[int, GpuMemory] = {}
        self.ahead = SeedsAhead()
        self.under_way: Counter[tuple[Backend, int]] = Counter()
        self._next_device = 0
        self._spawned = 0

    @property
    def config(self) -> ExecutorConfig:
        return self.settings.executor

    # which backends and devices --------------------------------------------------------------------
    def backends(self) -> list[Backend]:
        """The backends an evaluation runs on when none is asked for."""
        if self.config.backend == "auto":
            return [Backend.cuda] if self.environment.has_gpu else [Backend.compile, Backend.interpret]
        return self.explicit(self.config.backend)

    def explicit(self, backend: str) -> list[Backend]:
        """Raises: ConfigError: the backend asked for needs a GPU this machine lacks."""
        chosen = Backend(backend)
        if chosen is Backend.cuda and not self.environment.has_gpu:
            raise ConfigError("backend 'cuda' needs a CUDA GPU, and none is visible; use 'compile' or 'interpret'")
        return [chosen]

    def devices(self, backend: Backend) -> list[int]:
        """The devices a backend evaluates on: the GPUs chosen (`executor.gpus`, default all visible) for `cuda`,
        one for the CPU backends."""
        if backend is not Backend.cuda:
            return [0]
        return self.config.gpus if self.config.gpus is not None else list(range(len(self.environment.gpus)))

    def waits_for_spares(self, backend: Backend) -> bool:
        """Whether timing an uncached reference on `backend` first waits for starting spare workers: yes
        unless this machine keeps worker starts on cores apart from the measuring ones (a GPU machine with
        at least 8 cores, see `plan_cores`)."""
        return not (backend is Backend.cuda and self.cores.separate)

    # the parts of a lane -------------------------------------------------------------------------------
    def _spawn_for(self, role: str, backend: Backend, device: int) -> Callable[[], Awaitable[WorkerChannel]]:
        env = dict(self.worker_env)
        if backend is Backend.interpret and role == "candidate":
            env["TRITON_INTERPRET"] = "1"
        # Candidate workers warm up while holding the device. The judge does not wait for it: a judge
        # restarted under the lock (by the evaluation holding it) would wait forever.
        gate = self.lock(device) if backend is Backend.cuda and role == "candidate" else None
        # A GPU's judge runs on the cores kept for measuring on it; candidates start on the others.
        cpus = self.cores.for_judge(device) if role == "judge" and backend is Backend.cuda else None
        if role == "candidate":
            cpus = self.cores.for_spare()

        async def spawn() -> WorkerChannel:
            self._spawned += 1
            return await self.spawner.spawn(
                SpawnRequest(
                    role=role,  # type: ignore[arg-type]
                    backend=backend.value,
                    device=device,
                    env=env,
                    exchange=self.exchange / f"{role}-{backend.value}-{device}-{self._spawned}",
                    gate=(lambda: gate) if gate is not None else None,
                    cpus=cpus,
                )
            )

        return spawn

    def lock(self, device: int) -> DeviceLock:
        """The lock of visible GPU `device`, shared with every adaexplore process on this machine."""
        if device not in self.locks:
            folder = self.config.device_lock_dir or default_lock_dir()
            name = physical_gpu(device, self.worker_env).replace("/", "_")
            self.locks[device] = DeviceLock(folder / f"cuda-{name}.lock")
        return self.locks[device]

    def memory(self, device: int) -> GpuMemory:
        """The book of memory reservations on GPU `device`. A CUDA context is held, whatever runs, by its judge, its
        spare workers and the workers of the evaluations that hold a slot (waiting for their turn or not); its
        judge drops the references no evaluation uses when a reservation needs their room."""
        if device not in self.memories:
            book = self.memories[device] = GpuMemory(resident=1 + self.warm + self.config.max_concurrent)
            judge = self.judge(Backend.cuda, device)

            async def evict_idle() -> None:
                await judge.memory(self.config.load_timeout_s, MemoryQuery(evict_idle=True))

            book.evict_idle = evict_idle
        return self.memories[device]

    def pool(self, backend: Backend, device: int) -> WorkerPool:
        key = (backend, device)
        if key not in self.pools:
            self.pools[key] = WorkerPool(
                self.group,
                self._spawn_for("candidate", backend, device),
                warm=self.warm,
                ready_timeout=self.config.load_timeout_s,
            )
            self.slots[key] = anyio.Semaphore(self.config.max_concurrent)
        return self.pools[key]

    def judge(self, backend: Backend, device: int) -> JudgeClient:
        key = f"cuda:{device}" if backend is Backend.cuda else "cpu"
        if key not in self.judges:
            judge_backend = Backend.cuda if backend is Backend.cuda else Backend.interpret
            self.judges[key] = JudgeClient(
                self._spawn_for("judge", judge_backend, device), ready_timeout=self.config.load_timeout_s
            )
            if backend is Backend.cuda:
                self.judges[key].book = self.memory(device)
        return self.judges[key]

    def task_file(self, task: Task) -> Path:
        """The task's source where the judges can read it."""
        return workspace.task_file(self.exchange, task)

    def job(self, run: Run, backend: Backend, exchange: Path, task_path: Path | None = None) -> JobSpec:
        """A job for a worker whose directory is `exchange`, where the candidate is written. Every worker and
        judge reads the task from one file, so the judge keeps one module and one set of references per task."""
        if task_path is None:
            task_path = self.task_file(run.task)
            (exchange / "candidate.py").write_text(run.code)
            run.exchanges.append(exchange)
        return jobs.job(run, backend, exchange, task_path, self.config)

    # lanes --------------------------------------------------------------------------------------------
    def lane(self, backend: Backend, device: int) -> Lane:
        """The lane of `backend` on `device`: its pool, slot, judge and lock, made on first use."""
        gpu = backend is Backend.cuda
        measure = self.cores.for_judge(device) if gpu else None

        def pin(worker: WorkerChannel) -> None:
            if measure is not None:
                self.spawner.pin(worker, measure)

        pool = self.pool(backend, device)
        return Lane(
            backend=backend,
            device=device,
            config=self.config,
            pool=pool,
            slot=self.slots[(backend, device)],
            judge=None if backend is Backend.compile else self.judge(backend, device),
            lock=self.lock(device) if gpu else None,
            memory=self.memory(device) if gpu else None,
            group=self.group,
            job=self.job,
            pin_for_measuring=pin,
            waits_for_spares=self.waits_for_spares(backend),
            wait_warm=self.wait_warm,
            fingerprint=self.environment.fingerprint(device),
            physical_gpu=physical_gpu(device, self.worker_env) if self.environment.has_gpu else None,
            cache_dir=self.settings.cache_dir,
            ahead=self.ahead,
        )

    @contextlib.contextmanager
    def lane_for(self, backend: Backend, *, turn: bool = True) -> Iterator[Lane]:
        """The lane of `backend` on its least busy device, counted busy while the caller holds it."""
        with self.device_for(backend, turn=turn) as device:
            yield self.lane(backend, device)

    @contextlib.contextmanager
    def device_for(self, backend: Backend, *, turn: bool = True) -> Iterator[int]:
        """The device of `backend` with the fewest evaluations under way (ties taken in turn), counted as
        busy with one more while the caller holds it. `turn=False` (a task's check) takes the tie without
        moving the turn on, so that the evaluations that follow it still alternate."""
        devices = self.devices(backend)
        start = (self._next_device + 1) % len(devices)
        if turn:
            self._next_device = start
        order = devices[start:] + devices[:start]
        device = min(order, key=lambda d: self.under_way[(backend, d)])
        self.under_way[(backend, device)] += 1
        try:
            yield device
        finally:
            self.under_way[(backend, device)] -= 1
