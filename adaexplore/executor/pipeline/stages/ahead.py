"""References built ahead, on fresh seeds.

Strict mode draws new secret seeds for every evaluation, so the judge builds every evaluation's reference
anew: the model and its weights, five trials of inputs, a float64 reference and its outputs. A search evaluates
one task step after step, with the judge idle in between (while the model thinks, while the candidate's worker
starts and compiles). After an evaluation on fresh seeds, the judge is asked to build the next evaluation's
reference on seeds drawn now, the same way, and to keep it; the next evaluation of the task on that judge takes
those seeds and finds its reference ready. Each set of seeds still serves exactly one evaluation and is shown
only in that evaluation's provenance, as before, so no candidate can know its inputs in advance.

One reference is kept ahead per task, protocol and judge. The judge computes it under the GPU's lock, so it
never runs beside a timing, and builds it within a reservation of the GPU's memory like an evaluation's (the
judge's part of it, `footprint.py`); an unused one is evicted from the judge's cache like any other reference. A
failure here is the next evaluation's to meet again (it builds its own reference): it is logged for whoever
runs the evaluator, and changes no verdict.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import TaskGroup

from adaexplore.config import ExecutorConfig
from adaexplore.domain import Backend
from adaexplore.errors import EvaluatorError
from adaexplore.executor.host._device_lock import DeviceLock
from adaexplore.executor.host._gpu_memory import GpuMemory
from adaexplore.executor.host._pool import JudgeClient
from adaexplore.executor.pipeline.stages.footprint import need
from adaexplore.executor.wire._protocol import JobSpec, Load, Loaded, Prepare, Prepared

__all__ = ["Ahead", "SeedsAhead", "fresh_seeds", "wanted"]

log = logging.getLogger(__name__)

# what a job says besides its seeds and its worker: the reference two such jobs share
_NOT_THE_REFERENCE = {
    "job_id",
    "exchange_dir",
    "init_seed",
    "trial_seeds",
    "timing_seed",
    "device_exchange",
    "keep_reference",
}


def fresh_seeds(trials: int) -> dict[str, Any]:
    """New secret seeds for one evaluation: its weights, each trial and timing."""
    draw = secrets.SystemRandom()
    return {
        "init_seed": draw.randrange(2**31),
        "trial_seeds": [draw.randrange(2**31) for _ in range(trials)],
        "timing_seed": draw.randrange(2**31),
    }


@dataclass(frozen=True)
class Ahead:
    """Seeds whose reference the judge holds, and the seconds it spent building it."""

    seeds: dict[str, Any]
    seconds: float


@dataclass
class SeedsAhead:
    """The references built ahead, one per task, protocol and judge."""

    _ready: dict[str, Ahead] = field(default_factory=dict)
    _building: dict[str, anyio.Event] = field(default_factory=dict)

    async def take(self, where: str, job: JobSpec) -> Ahead | None:
        """The seeds built ahead for a job like `job` on the judge of `where` (each handed out once), or None.
        One still being built is waited for: the judge serves one request at a time, so this evaluation's own
        reference would wait behind it anyway."""
        key = _key(where, job)
        building = self._building.get(key)
        if building is not None:
            await building.wait()
        return self._ready.pop(key, None)

    def keep(self, where: str, job: JobSpec, seconds: float) -> None:
        """`job`'s reference, which the judge of `where` built on fresh seeds and keeps (a task's check), for the
        next evaluation like it."""
        seeds = {"init_seed": job.init_seed, "trial_seeds": job.trial_seeds, "timing_seed": job.timing_seed}
        self._ready[_key(where, job)] = Ahead(seeds=seeds, seconds=round(seconds, 4))

    def build_next(
        self,
        where: str,
        job: JobSpec,
        *,
        judge: JudgeClient,
        lock: DeviceLock | None,
        group: TaskGroup,
        config: ExecutorConfig,
        memory: GpuMemory | None = None,
    ) -> None:
        """Have `judge` (that of `where`) build, beside whatever comes next, a reference like `job`'s on new
        seeds, computing it under `lock` and within a reservation in `memory`, unless one is built or being
        built."""
        key = _key(where, job)
        if key in self._ready or key in self._building:
            return
        self._building[key] = anyio.Event()
        group.start_soon(self._build, judge, lock, memory, config, job, key)

    async def _build(
        self,
        judge: JudgeClient,
        lock: DeviceLock | None,
        memory: GpuMemory | None,
        config: ExecutorConfig,
        template: JobSpec,
        key: str,
    ) -> None:
        seeds = fresh_seeds(template.trials)
        job = template.model_copy(
            update={**seeds, "job_id": secrets.token_hex(8), "device_exchange": False, "keep_reference": True}
        )
        start = time.perf_counter()
        answer: object = None
        try:
            async with contextlib.AsyncExitStack() as held:
                if memory is not None:  # the judge's part of an evaluation's memory: the reference it builds
                    await held.enter_async_context(memory.reserve(await need(judge, memory, config, job, worker=False)))
                try:
                    answer = await judge.request(Load(job=job), config.load_timeout_s)
                    if isinstance(answer, Loaded):
                        # the reference's outputs are computed on the GPU: never beside a timing
                        async with lock if lock is not None else contextlib.nullcontext():
                            answer = await judge.request(
                                Prepare(job_id=job.job_id), config.trial_timeout_s * (job.trials + 3)
                            )
                finally:  # within the reservation: the judge's answer says what it keeps of the reference
                    with anyio.CancelScope(shield=True), contextlib.suppress(EvaluatorError):
                        await judge.release(job.job_id)
        except EvaluatorError as exc:
            answer = exc
        finally:
            if isinstance(answer, Prepared):
                self._ready[key] = Ahead(seeds=seeds, seconds=round(time.perf_counter() - start, 4))
            self._building.pop(key).set()
        if not isinstance(answer, Prepared):
            log.warning("the judge could not build a reference ahead for %s: %s", template.task_path, answer)


def wanted(config: ExecutorConfig, backend: Backend, job: JobSpec) -> bool:
    """Whether evaluations of `job`'s kind on `backend` have their next reference built ahead."""
    if job.init_seed is None:  # the protocol's fixed seeds: the judge keeps that reference anyway
        return False
    return config.reference_ahead if config.reference_ahead is not None else backend is Backend.cuda


def _key(where: str, job: JobSpec) -> str:
    return json.dumps([where, job.model_dump(mode="json", exclude=_NOT_THE_REFERENCE)], sort_keys=True)
