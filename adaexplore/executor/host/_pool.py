"""Pre-started workers: candidate pools (one process per candidate) and the long-lived judge; and where on the
machine's cores they run."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio
from anyio.abc import TaskGroup

from adaexplore.errors import EvaluatorError
from adaexplore.executor.host._gpu_memory import GpuMemory
from adaexplore.executor.host._process import WorkerDied, WorkerTimeout
from adaexplore.executor.host._spawn import WorkerChannel
from adaexplore.executor.wire._protocol import Event, Load, MemoryQuery, MemoryReport, Phase, Ready, Release

__all__ = [
    "CorePlan",
    "JudgeClient",
    "JudgeLost",
    "JudgeReplaced",
    "WorkerPool",
    "default_warm_workers",
    "plan_cores",
]

# Below this many cores, worker starts share the cores of the measurement, so the evaluator waits for them.
MIN_CORES_TO_SEPARATE = 8
# Cores kept per GPU for its judge and the candidate being measured on it.
MEASURE_CORES_PER_GPU = 2
# Cores that must remain, beside those, for starting workers and compiling.
MIN_SPARE_CORES = 4


def default_warm_workers(cores: int, gpus: int) -> int:
    """Spare workers per pool when the setting leaves it to the machine: one per four cores of a GPU's share
    of the cores (every core on a machine without a GPU), at least 1 and at most 4."""
    share = cores // max(gpus, 1)
    return min(4, max(1, share // 4))


@dataclass(frozen=True)
class CorePlan:
    """Which cores measure and which start workers. `measure[d]` runs GPU d's judge and the candidate being
    timed on it; `spare` runs every worker while it starts, warms up and compiles. Without a split (too few
    cores), `measure` is empty and nothing is pinned."""

    spare: frozenset[int] = frozenset()
    measure: dict[int, frozenset[int]] = field(default_factory=dict)

    @property
    def separate(self) -> bool:
        """Whether starts are kept off the measuring cores (then no measurement waits for them)."""
        return bool(self.measure)

    def for_judge(self, device: int) -> frozenset[int] | None:
        return self.measure.get(device)

    def for_spare(self) -> frozenset[int] | None:
        return self.spare if self.separate else None


def plan_cores(cpus: set[int] | frozenset[int] | None = None, gpus: int = 0) -> CorePlan:
    """Split `cpus` (default: the cores this process may use) between measuring and starting workers: with at
    least 8 cores and, besides two per GPU, at least 4 left, each GPU gets two cores of its own. Otherwise
    (fewer cores, or no GPU) there is no split."""
    available = sorted(cpus if cpus is not None else os.sched_getaffinity(0))
    reserved = MEASURE_CORES_PER_GPU * gpus
    if gpus == 0 or len(available) < MIN_CORES_TO_SEPARATE or len(available) - reserved < MIN_SPARE_CORES:
        return CorePlan()
    # the highest-numbered cores measure: the lowest often take the machine's interrupts and daemons
    measure = {
        device: frozenset(available[len(available) - (device + 1) * MEASURE_CORES_PER_GPU :][:MEASURE_CORES_PER_GPU])
        for device in range(gpus)
    }
    return CorePlan(spare=frozenset(available[: len(available) - reserved]), measure=measure)


class JudgeLost(EvaluatorError):
    """The judge died or did not answer while it worked on a request (not while starting)."""

    def __init__(self, message: str, *, timed_out: bool, output: str, returncode: int | None = None) -> None:
        super().__init__(message)
        self.timed_out = timed_out
        self.output = output
        self.returncode = returncode  # negative: the signal that killed it


class JudgeReplaced(EvaluatorError):
    """A request for a job that the judge's process does not hold: the job was loaded in a judge process that has
    been replaced since (it died, timed out, or was restarted), so its reference went with it. Nothing was sent."""


Spawn = Callable[[], Awaitable[WorkerChannel]]


class WorkerPool:
    """Keeps `warm` workers started and ready (torch and triton imported, device context made)."""

    def __init__(self, task_group: TaskGroup, spawn: Spawn, *, warm: int, ready_timeout: float) -> None:
        self._tg = task_group
        self._spawn = spawn
        self._warm = warm
        self._ready_timeout = ready_timeout
        self._spares: list[WorkerChannel] = []
        self._starting = 0  # spares asked for and not yet ready
        self._spawning = 0  # spares asked for whose process is not yet in `_spares`
        self._closed = False

    def fill(self) -> None:
        for _ in range(self._warm - len(self._spares) - self._spawning):
            # counted from now, so that `wait_warm` called right after waits for it
            self._starting += 1
            self._spawning += 1
            self._tg.start_soon(self._add_spare)

    def start_one_more(self) -> None:
        """Start one spare beyond `warm` now, for an evaluation that will want a second worker as soon as its
        first is done (the check at the full reduction lengths): it starts while the first one works, and `fill`
        starts no replacement while the spares are as many as `warm`."""
        if not self._closed:
            self._starting += 1
            self._spawning += 1
            self._tg.start_soon(self._add_spare)

    async def _add_spare(self) -> None:
        try:
            if self._closed:
                self._spawning -= 1
                return
            try:
                worker = await self._spawn()
            finally:
                self._spawning -= 1
            if self._closed:  # closed while the process was made: `aclose` did not see it
                await worker.aclose()
                return
            self._spares.append(worker)
            try:
                await worker.ready(self._ready_timeout)
            except (WorkerDied, WorkerTimeout):
                if worker in self._spares:
                    self._spares.remove(worker)
                await worker.aclose()
            except BaseException:  # cancelled (its evaluator closing): ended here, unless a caller took it
                if worker in self._spares:
                    self._spares.remove(worker)
                    await worker.aclose()
                raise
        finally:
            self._starting -= 1

    async def acquire(self) -> tuple[WorkerChannel, Ready]:
        """A ready worker, used for exactly one candidate. The caller calls `fill` once it is done with it,
        so the replacement does not start while the candidate is being measured.

        Raises:
            EvaluatorError: a new worker could not start (its output says why).
        """
        while self._spares:
            worker = self._spares.pop(0)
            try:
                return worker, await worker.ready(self._ready_timeout)
            except (WorkerDied, WorkerTimeout):
                await worker.aclose()
        worker = await self._spawn()
        try:
            return worker, await worker.ready(self._ready_timeout)
        except (WorkerDied, WorkerTimeout) as exc:
            await worker.aclose()
            raise EvaluatorError(f"a {worker.backend} worker failed to start: {worker.output.text()[-3000:]}") from exc
        except BaseException:  # cancelled while it started: no one else knows of this worker
            await worker.aclose()
            raise

    async def wait_warm(self) -> None:
        """Return once no spare of the pool is starting or warming up (a spare that failed to start is
        dropped, as it is when the pool starts it)."""
        while self._starting:
            await anyio.sleep(0.02)

    async def aclose(self) -> None:
        self._closed = True
        spares, self._spares = self._spares, []
        for worker in spares:
            await worker.aclose()


class JudgeClient:
    """The judge process of one device: one request at a time, restarted if it dies.

    It serves every evaluation of its device at once, so it knows which process each job was loaded in (its
    `generation`, counted up with each process started): a request for a job of a process that has been replaced
    since fails at once (`JudgeReplaced`) without being sent, and that evaluation's retry loads the job again. A
    process that must go for one evaluation's sake without having failed itself is `retire`d: replaced once it
    holds no other evaluation's job."""

    def __init__(self, spawn: Spawn, *, ready_timeout: float, book: GpuMemory | None = None) -> None:
        self._spawn = spawn
        self._ready_timeout = ready_timeout
        self._worker: WorkerChannel | None = None
        self._lock = anyio.Lock()
        self.ready: Ready | None = None
        self._owed = 0  # answers the judge will still send for requests that were cancelled
        self._owed_timeout = 0.0
        self.generation = 0
        self._loaded: dict[str, int] = {}  # job id -> the generation of the process it was loaded in
        self._retiring: WorkerChannel | None = None
        # the device's book of reservations, told the device's memory and the references the judge keeps unused
        self.book = book

    def holds(self, job_id: str) -> bool:
        """Whether the judge's process now is the one `job_id` was loaded in (and still runs)."""
        return self._worker is not None and self._loaded.get(job_id) == self.generation

    def _jobs_held(self) -> int:
        return sum(1 for generation in self._loaded.values() if generation == self.generation)

    async def _drop(self, worker: WorkerChannel) -> None:
        """End the judge's process `worker` (the next request starts another): what it held is gone."""
        if self._worker is worker:
            self._worker, self.ready = None, None
        if self._retiring is worker:
            self._retiring = None
        if self.book is not None:
            self.book.learn(idle=0)
        with anyio.CancelScope(shield=True):
            await worker.aclose()

    async def start(self) -> Ready:
        async with self._lock:
            return await self._ensure()

    async def _ensure(self) -> Ready:
        if self._worker is None:
            worker = await self._spawn()
            try:
                ready = await worker.ready(self._ready_timeout)
            except (WorkerDied, WorkerTimeout) as exc:
                output = worker.output.text()[-3000:]
                await worker.aclose()
                why = f"was not ready within {self._ready_timeout:g} s" if isinstance(exc, WorkerTimeout) else "died"
                raise EvaluatorError(
                    f"the judge process failed to start: it {why}: {output.strip() or '(it wrote nothing)'}"
                ) from exc
            except BaseException:  # cancelled while it started: the next request starts another
                with anyio.CancelScope(shield=True):
                    await worker.aclose()
                raise
            self._worker, self.ready = worker, ready
            self._owed, self._owed_timeout = 0, 0.0
            self.generation += 1
        assert self.ready is not None
        return self.ready

    async def request(self, command: object, timeout: float) -> Event:
        """Send one command and return its answer.

        Raises:
            EvaluatorError: the judge died or did not answer in time (it is restarted on the next request).
        """
        answer = await self._request(command, timeout, start=True)
        assert answer is not None
        return answer

    async def _request(self, command: object, timeout: float, *, start: bool) -> Event | None:
        """`request`; without `start`, None (nothing sent) where no judge runs when its turn comes.

        Raises:
            JudgeReplaced: `command` names a job the judge's process now does not hold (not for a `Release`,
                which then has nothing to do and returns None).
        """
        loading = command.job.job_id if isinstance(command, Load) else None
        job_id: str | None = getattr(command, "job_id", None)
        async with self._lock:
            held = job_id is not None and self.holds(job_id)
            if isinstance(command, Release) and job_id is not None:
                self._loaded.pop(job_id, None)  # sent now, or nothing to release
                if not held:
                    return None
            elif loading is None and job_id is not None and not held:
                forgotten = self._loaded.pop(job_id, None)
                raise JudgeReplaced(
                    f"the judge that loaded this evaluation's job was replaced since (another evaluation's failure "
                    f"or its own ended it), and its reference with it; nothing was sent for this "
                    f"{getattr(command, 'kind', 'request')} request"
                    if forgotten is not None
                    else f"the judge was never asked to load job {job_id!r}"
                )
            if self._retiring is not None and self._retiring is self._worker and not self._jobs_held():
                await self._drop(self._retiring)  # retired: no job of any evaluation is lost with it
            if not start and self._worker is None:
                return None
            await self._ensure()
            assert self._worker is not None
            worker = self._worker
            if loading is not None:
                self._loaded[loading] = self.generation
            sent = False
            try:
                # Answers still owed to cancelled requests come first: each is read and dropped, so this
                # request gets its own answer, and the jobs other requests loaded stay loaded.
                while self._owed:
                    if not isinstance(await worker.receive(max(timeout, self._owed_timeout)), Phase):
                        self._owed -= 1
                await worker.send(command)
                sent = True
                while True:
                    event = await worker.receive(timeout)
                    if not isinstance(event, Phase):
                        break
            except BaseException as exc:
                if not isinstance(exc, WorkerDied | WorkerTimeout):
                    if sent:  # cancelled while the judge works on it: its answer is owed
                        self._owed += 1
                        self._owed_timeout = max(self._owed_timeout, timeout)
                    else:  # cancelled while sending: the judge may hold half a command
                        await self._drop(worker)
                    raise
                output = worker.output.text()[-3000:]
                await self._drop(worker)
                timed_out = isinstance(exc, WorkerTimeout)
                what = "timed out" if timed_out else "died"
                raise JudgeLost(
                    f"the judge process {what}: {output.strip() or '(it wrote nothing)'}",
                    timed_out=timed_out,
                    output=output,
                    returncode=worker.returncode,
                ) from exc
            if isinstance(event, MemoryReport) and self.book is not None:
                self.book.learn(total=event.total_bytes, idle=event.idle_bytes)
            if isinstance(command, Release) and self._retiring is worker and not self._jobs_held():
                await self._drop(worker)
            return event

    async def restart(self, worker: WorkerChannel | None = None) -> None:
        """Stop the judge once its current request is answered, so that the next request starts a fresh one
        (every job loaded in it is lost: their evaluations' next requests fail with `JudgeReplaced`). With
        `worker`: only if that is still the judge's process. For a judge that broke (it answered out of turn)."""
        async with self._lock:
            if self._worker is not None and (worker is None or worker is self._worker):
                await self._drop(self._worker)

    async def retire(self, worker: WorkerChannel) -> None:
        """Replace the judge's process `worker` once it holds no job (at once if it holds none now): for a judge
        suspected of holding memory it should not, whose other evaluations must not lose their jobs to it."""
        async with self._lock:
            if worker is not self._worker:
                return
            if self._jobs_held():
                self._retiring = worker
            else:
                await self._drop(worker)

    @property
    def worker(self) -> WorkerChannel | None:
        """The judge's process now, if it runs."""
        return self._worker

    async def memory(self, timeout: float = 30, query: MemoryQuery | None = None) -> MemoryReport | None:
        """The judge's memory report (with what `query` asks besides), or None when no judge runs or it does not
        answer with one.

        Raises:
            EvaluatorError: the judge died or did not answer in time.
        """
        if self._worker is None:
            return None
        event = await self.request(query or MemoryQuery(), timeout)
        return event if isinstance(event, MemoryReport) else None

    async def release(self, job_id: str) -> None:
        """Drop a job the judge holds; nothing to do when the judge it was loaded in is gone (no judge is started
        for it: one that ended while this waited for its turn held nothing)."""
        await self._request(Release(job_id=job_id), timeout=30, start=False)

    async def aclose(self) -> None:
        if self._worker is not None:
            await self._drop(self._worker)
