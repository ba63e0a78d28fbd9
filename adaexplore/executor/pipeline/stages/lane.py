"""What a stage is given instead of the evaluator: a `Lane` (one backend on one device, with everything a stage
uses there) and `Lanes` (what the stages ask of whoever runs them: a lane for a backend, the backends in use,
the settings). The stages never see the `Evaluator` itself, so they cannot reach its pools, judges or locks
except through the lane they were handed; tests build lanes from a scripted spawner.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import anyio
from anyio.abc import TaskGroup

from adaexplore.config import ExecutorConfig
from adaexplore.domain import Backend
from adaexplore.executor.host._device_lock import DeviceLock
from adaexplore.executor.host._gpu_memory import GpuMemory
from adaexplore.executor.host._pool import JudgeClient, WorkerPool
from adaexplore.executor.host._spawn import WorkerChannel
from adaexplore.executor.pipeline.stages.ahead import SeedsAhead
from adaexplore.executor.pipeline.stages.context import Run
from adaexplore.executor.tasks._task import Task
from adaexplore.executor.wire._protocol import JobSpec

__all__ = ["Lane", "Lanes"]


@dataclass(frozen=True)
class Lane:
    """One backend on one device: its pool of candidate workers and the slot that bounds how many evaluations
    hold one, its judge, the GPU's lock and its book of memory reservations (None on the CPU backends), and what
    the stages need of the evaluator around them."""

    backend: Backend
    device: int
    config: ExecutorConfig
    pool: WorkerPool
    slot: anyio.Semaphore
    judge: JudgeClient | None  # None: the compile backend, which checks no numbers
    lock: DeviceLock | None
    memory: GpuMemory | None
    # where a stage starts work that runs beside it (the judge's load while the candidate compiles)
    group: TaskGroup
    # the job of a worker whose directory is the given one (the candidate is written there), or a task check's
    job: Callable[[Run, Backend, Path, Path | None], JobSpec]
    # puts a candidate's worker on the cores kept for measuring on this GPU (nothing on the CPU backends)
    pin_for_measuring: Callable[[WorkerChannel], None]
    # whether timing an uncached reference first waits for starting spares, and the wait itself
    waits_for_spares: bool
    wait_warm: Callable[[], Awaitable[None]]
    # this device's environment fingerprint, its physical GPU (None on the CPU), and the cache of references
    fingerprint: str
    physical_gpu: str | None
    cache_dir: Path
    # the references its judge built ahead on fresh seeds (stages/ahead.py), shared by every lane of that judge
    ahead: SeedsAhead

    @property
    def where(self) -> str:
        """Its judge's name among the evaluator's: the backend and the device."""
        return f"{self.backend.value}:{self.device}"

    def make_job(self, run: Run, exchange: Path, task_path: Path | None = None) -> JobSpec:
        """The job of a worker whose directory is `exchange`: the candidate is written there (a task's check,
        with `task_path`, has none)."""
        return self.job(run, self.backend, exchange, task_path)


class Lanes(Protocol):
    """What the stages ask of the evaluator that runs them."""

    @property
    def config(self) -> ExecutorConfig: ...

    def lane(self, backend: Backend, device: int) -> Lane:
        """The lane of `backend` on `device`, as it is."""
        ...

    def lane_for(self, backend: Backend, *, turn: bool = True) -> AbstractContextManager[Lane]:
        """The lane of `backend` on its least busy device, counted busy while the caller holds it."""
        ...

    def backends(self) -> list[Backend]:
        """The backends an evaluation runs on by default."""
        ...

    def explicit(self, backend: str) -> list[Backend]:
        """The backend asked for by name, if this machine has it (else a ConfigError)."""
        ...

    def task_file(self, task: Task) -> Path:
        """The task's source where the judges can read it."""
        ...
