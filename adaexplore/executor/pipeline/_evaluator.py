"""The evaluator: one `evaluate(task, code)` call, from static checks to a verdict with provenance.

It never imports candidate code. Candidates run in pre-started worker processes, one fresh process per
candidate, killed by process group when done or late. References run in a judge process per device that
never imports a candidate, which also compares outputs. On a GPU the device is held by one evaluation
at a time for correctness and timing, while other candidates compile beside it.

This module owns the lifecycle (pools, judges, device locks, the sandbox, the exchange directory, which
cores measure) and runs the stages of `adaexplore.executor.pipeline.stages` in order; an evaluation that fails
through no fault of the candidate (`infra_error`) is run once more before it is reported.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup

from adaexplore.config import Settings
from adaexplore.domain import Backend, Evaluation, Mode, Status
from adaexplore.errors import AdaexploreError, ConfigError, EvaluatorError
from adaexplore.executor.host import _workspace as workspace
from adaexplore.executor.host._device_lock import DeviceLock, default_lock_dir, physical_gpu
from adaexplore.executor.host._environment import Environment, probe_environment
from adaexplore.executor.host._pool import CorePlan, JudgeClient, WorkerPool, default_warm_workers, plan_cores
from adaexplore.executor.host._sandbox import SandboxPlan, detect_sandbox
from adaexplore.executor.host._spawn import ProcessSpawner, Spawner, SpawnRequest, WorkerChannel
from adaexplore.executor.pipeline import _input_sets as input_sets
from adaexplore.executor.pipeline import _jobs as jobs
from adaexplore.executor.pipeline.stages import compile as compile_stage
from adaexplore.executor.pipeline.stages import faults, full_path, numerics, precision, result, static, task_check
from adaexplore.executor.pipeline.stages.context import Progress, ProgressUpdate, Run, Verdict
from adaexplore.executor.pipeline.stages.lane import Lane
from adaexplore.executor.tasks._task import Task
from adaexplore.executor.wire._protocol import JobSpec
from adaexplore.roofline import TaskWork, gpu_spec

__all__ = ["Evaluator", "Progress", "ProgressUpdate"]

_Run = Run  # the name tests and older callers use
_Verdict = Verdict
# an evaluation that fails through no fault of the candidate is run this many times in all
_ATTEMPTS = 2


@dataclass
class _Start:
    """One attempt to start the evaluator: set when it has ended, with its failure if it failed."""

    done: anyio.Event = field(default_factory=anyio.Event)
    failure: AdaexploreError | None = None


class Evaluator:
    """Evaluates candidates for tasks. Use as `async with Evaluator(settings) as evaluator:`.

    `spawner` starts the workers (default: sandboxed processes); `environment`, `sandbox` and `cpus` stand in
    for what would otherwise be probed on this machine (its versions and GPUs, its sandbox, its cores).
    `start_in_background`: entering returns at once, and the start (probing torch, triton and the GPUs in a
    worker, then the pools and judges) runs beside the caller; `evaluate` and `check_task` wait for it (see
    `ready`). Otherwise entering waits for it, and raises what it raises.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        spawner: Spawner | None = None,
        environment: Environment | None = None,
        sandbox: SandboxPlan | None = None,
        cpus: set[int] | frozenset[int] | None = None,
        start_in_background: bool = False,
    ) -> None:
        self.settings = settings or Settings()
        self.config = self.settings.executor
        self._tg: TaskGroup | None = None
        self._stack: contextlib.AsyncExitStack | None = None
        self._given_environment = environment
        self.environment: Environment | None = None
        self._pools: dict[tuple[Backend, int], WorkerPool] = {}
        self._judges: dict[str, JudgeClient] = {}
        self._slots: dict[tuple[Backend, int], anyio.Semaphore] = {}
        self._device_locks: dict[int, DeviceLock] = {}
        self._next_device = 0
        self._under_way: Counter[tuple[Backend, int]] = Counter()
        self._worker_env = workspace.worker_env(self.settings)
        self.sandbox: SandboxPlan | None = sandbox
        self._given_spawner = spawner
        self.spawner: Spawner = spawner  # type: ignore[assignment]  # the default is made on entry
        self._cpus = frozenset(cpus if cpus is not None else os.sched_getaffinity(0))
        self.cores = CorePlan()
        self.warm_workers = 0
        # the directory that holds every worker's own exchange directory, and the tasks the judges read
        self._exchange: Path | None = None
        self._spawned = 0
        self._in_background = start_in_background
        self._start_attempt: _Start | None = None

    # lifecycle ---------------------------------------------------------------------------------
    async def __aenter__(self) -> Evaluator:
        self._stack = contextlib.AsyncExitStack()
        await self._stack.__aenter__()
        # last, once every task has ended: a worker that a late task is still starting is made in the exchange
        self._stack.callback(self._remove_exchange)
        self._tg = await self._stack.enter_async_context(anyio.create_task_group())
        self._stack.push_async_callback(self._shutdown)
        self._begin_start()
        if not self._in_background:
            try:
                await self.ready()
            except BaseException:
                await self.__aexit__(None, None, None)
                raise
        return self

    def _begin_start(self) -> _Start:
        assert self._tg is not None
        attempt = self._start_attempt = _Start()

        async def start() -> None:
            try:
                await self._start()
            except AdaexploreError as exc:
                attempt.failure = exc
            except Exception as exc:  # not a setting or a missing package: a fault of ours, said as one
                attempt.failure = EvaluatorError(f"the evaluator could not start: {type(exc).__name__}: {exc}")
                attempt.failure.__cause__ = exc
            except BaseException:  # cancelled: the evaluator is closing, and whoever waits must not go on
                attempt.failure = EvaluatorError("the evaluator was closed while it was starting")
                raise
            finally:
                attempt.done.set()

        self._tg.start_soon(start)
        return attempt

    async def _start(self) -> None:
        assert self._tg is not None
        if self.config.target_gpu != "auto":
            gpu_spec(self.config.target_gpu)  # a name the table does not hold is refused with the list
        workspace.remove_orphaned_exchanges()
        if self.sandbox is None:
            self.sandbox = await detect_sandbox(self.settings)
        workspace.not_dumpable()
        if self._exchange is None:  # else an earlier attempt made it, and failed after
            self._exchange = Path(tempfile.mkdtemp(prefix=f"adaexplore-{os.getpid()}-", dir=workspace.exchange_root()))
            (self._exchange / "tasks").mkdir()
        self.environment = self._given_environment or await self._probe()
        self._check_gpus(self.environment)
        if self._given_spawner is None:
            self.spawner = ProcessSpawner(
                self._tg, sandbox=self.sandbox, exchange_root=self._exchange, settings=self.settings
            )
        backends = self._default_backends()
        gpus = len(self.environment.gpus) if Backend.cuda in backends else 0
        self.cores = plan_cores(self._cpus, gpus)
        configured = self.config.warm_workers
        self.warm_workers = configured if configured is not None else default_warm_workers(len(self._cpus), gpus)
        for backend in backends:
            for device in self._devices(backend):
                self._pool(backend, device).fill()
                if backend is not Backend.compile:
                    self._tg.start_soon(self._start_judge, self._judge(backend, device))

    def _check_gpus(self, environment: Environment) -> None:
        """Raises: ConfigError: `executor.gpus` names a GPU this machine does not show."""
        chosen, visible = self.config.gpus, len(environment.gpus)
        if chosen is None or all(g < visible for g in chosen):
            return
        where = os.environ.get("CUDA_VISIBLE_DEVICES")
        through = f" (CUDA_VISIBLE_DEVICES={where})" if where is not None else ""
        if not visible:
            raise ConfigError(
                f"--gpus / executor.gpus names GPU {max(chosen)}, but this machine shows no GPU{through}; drop it to "
                "check kernels on the CPU (compile and interpret backends, untimed)"
            )
        shown = f"GPUs 0-{visible - 1}" if visible > 1 else "GPU 0"
        raise ConfigError(
            f"--gpus / executor.gpus names GPU {max(chosen)}, but this machine shows {shown}{through}; "
            "name GPUs by their index among the visible ones"
        )

    async def _probe(self) -> Environment:
        timeout = self.config.load_timeout_s
        with anyio.move_on_after(timeout):
            return await probe_environment(self._worker_env)
        raise EvaluatorError(
            f"a worker did not finish importing torch and triton within {timeout:g} s (executor.load_timeout_s)"
        )

    async def ready(self, progress: Progress | None = None) -> None:
        """Wait until the evaluator has started: this machine probed, the pools and judges created (their
        processes may still be warming up). At once when it has; while it starts, `progress` hears so first.

        Raises:
            EvaluatorError: the start failed (torch or triton cannot be imported in a worker, say), with the
                reason; the next call starts it again.
            ConfigError: the settings ask for what this machine lacks (a sandbox, a GPU).
        """
        if self._tg is None:
            raise EvaluatorError("use the evaluator inside `async with Evaluator(...)`")
        attempt = self._start_attempt or self._begin_start()
        if not attempt.done.is_set():
            if progress is not None:
                message = "the evaluator is starting: a worker imports torch and triton and looks for GPUs"
                await progress(ProgressUpdate(stage="starting", message=message, elapsed_s=0.0))
            await attempt.done.wait()
        if attempt.failure is not None:
            if self._start_attempt is attempt:
                self._start_attempt = None
            raise attempt.failure

    async def wait_warm(self, timeout: float = 120.0) -> None:
        """Wait until no spare worker is starting or warming up and every judge is up: the next evaluation
        pays for no process start, and no start runs beside a measurement (benchmarks call this before
        measuring a warm evaluation; the evaluator before timing a reference where starts share its cores).

        Raises:
            EvaluatorError: a judge failed to start, or the workers were not ready within `timeout`.
        """
        try:
            with anyio.fail_after(timeout):
                await self.ready()
                for judge in list(self._judges.values()):
                    await judge.start()
                for pool in list(self._pools.values()):
                    await pool.wait_warm()
        except TimeoutError:
            raise EvaluatorError(f"the worker pools were not warm within {timeout:.0f} s") from None

    def waits_for_spares(self, backend: Backend) -> bool:
        """Whether timing an uncached reference on `backend` first waits for starting spare workers: yes
        unless this machine keeps worker starts on cores apart from the measuring ones (a GPU machine with
        at least 8 cores, see `plan_cores`)."""
        return not (backend is Backend.cuda and self.cores.separate)

    @staticmethod
    async def _start_judge(judge: JudgeClient) -> None:
        # A judge that fails here fails again, with its output, on the first request that needs it.
        with contextlib.suppress(EvaluatorError):
            await judge.start()

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._stack is not None and self._tg is not None
        self._tg.cancel_scope.cancel()
        await self._stack.__aexit__(*exc_info)

    async def _shutdown(self) -> None:
        with anyio.CancelScope(shield=True):
            for pool in self._pools.values():
                await pool.aclose()
            for judge in self._judges.values():
                await judge.aclose()

    def _remove_exchange(self) -> None:
        if self._exchange is not None:
            shutil.rmtree(self._exchange, ignore_errors=True)

    def _default_backends(self) -> list[Backend]:
        assert self.environment is not None
        if self.config.backend == "auto":
            return [Backend.cuda] if self.environment.has_gpu else [Backend.compile, Backend.interpret]
        return self._explicit(self.config.backend)

    def _explicit(self, backend: str) -> list[Backend]:
        assert self.environment is not None
        chosen = Backend(backend)
        if chosen is Backend.cuda and not self.environment.has_gpu:
            raise ConfigError("backend 'cuda' needs a CUDA GPU, and none is visible; use 'compile' or 'interpret'")
        return [chosen]

    def _devices(self, backend: Backend) -> list[int]:
        """The devices a backend evaluates on: the GPUs chosen (`executor.gpus`, default all visible) for `cuda`,
        one for the CPU backends."""
        assert self.environment is not None
        if backend is not Backend.cuda:
            return [0]
        return self.config.gpus if self.config.gpus is not None else list(range(len(self.environment.gpus)))

    def _spawner(self, role: str, backend: Backend, device: int) -> Callable[[], Awaitable[WorkerChannel]]:
        env = dict(self._worker_env)
        if backend is Backend.interpret and role == "candidate":
            env["TRITON_INTERPRET"] = "1"
        # Candidate workers warm up while holding the device. The judge does not wait for it: a judge
        # restarted under the lock (by the evaluation holding it) would wait forever.
        gate = self._device_lock(device) if backend is Backend.cuda and role == "candidate" else None
        # A GPU's judge runs on the cores kept for measuring on it; candidates start on the others.
        cpus = self.cores.for_judge(device) if role == "judge" and backend is Backend.cuda else None
        if role == "candidate":
            cpus = self.cores.for_spare()

        async def spawn() -> WorkerChannel:
            assert self._tg is not None and self._exchange is not None
            self._spawned += 1
            return await self.spawner.spawn(
                SpawnRequest(
                    role=role,  # type: ignore[arg-type]
                    backend=backend.value,
                    device=device,
                    env=env,
                    exchange=self._exchange / f"{role}-{backend.value}-{device}-{self._spawned}",
                    gate=(lambda: gate) if gate is not None else None,
                    cpus=cpus,
                )
            )

        return spawn

    def _device_lock(self, device: int) -> DeviceLock:
        """The lock of visible GPU `device`, shared with every adaexplore process on this machine."""
        if device not in self._device_locks:
            folder = self.config.device_lock_dir or default_lock_dir()
            name = physical_gpu(device, self._worker_env).replace("/", "_")
            self._device_locks[device] = DeviceLock(folder / f"cuda-{name}.lock")
        return self._device_locks[device]

    def _pool(self, backend: Backend, device: int) -> WorkerPool:
        key = (backend, device)
        if key not in self._pools:
            assert self._tg is not None
            self._pools[key] = WorkerPool(
                self._tg,
                self._spawner("candidate", backend, device),
                warm=self.warm_workers,
                ready_timeout=self.config.load_timeout_s,
            )
            self._slots[key] = anyio.Semaphore(self.config.max_concurrent)
        return self._pools[key]

    def _judge(self, backend: Backend, device: int) -> JudgeClient:
        key = f"cuda:{device}" if backend is Backend.cuda else "cpu"
        if key not in self._judges:
            judge_backend = Backend.cuda if backend is Backend.cuda else Backend.interpret
            self._judges[key] = JudgeClient(
                self._spawner("judge", judge_backend, device), ready_timeout=self.config.load_timeout_s
            )
        return self._judges[key]

    # what the stages are given (stages/lane.py) ---------------------------------------------------
    def lane(self, backend: Backend, device: int) -> Lane:
        """The lane of `backend` on `device`: its pool, slot, judge and lock, made on first use."""
        assert self._tg is not None and self.environment is not None
        gpu = backend is Backend.cuda
        measure = self.cores.for_judge(device) if gpu else None

        def pin(worker: WorkerChannel) -> None:
            if measure is not None:
                self.spawner.pin(worker, measure)

        pool = self._pool(backend, device)
        return Lane(
            backend=backend,
            device=device,
            config=self.config,
            pool=pool,
            slot=self._slots[(backend, device)],
            judge=None if backend is Backend.compile else self._judge(backend, device),
            lock=self._device_lock(device) if gpu else None,
            group=self._tg,
            job=self._job,
            pin_for_measuring=pin,
            waits_for_spares=self.waits_for_spares(backend),
            wait_warm=self.wait_warm,
            fingerprint=self.environment.fingerprint(device),
            physical_gpu=physical_gpu(device, self._worker_env) if self.environment.has_gpu else None,
            cache_dir=self.settings.cache_dir,
        )

    @contextlib.contextmanager
    def lane_for(self, backend: Backend, *, turn: bool = True) -> Iterator[Lane]:
        """The lane of `backend` on its least busy device, counted busy while the caller holds it."""
        with self._device_for(backend, turn=turn) as device:
            yield self.lane(backend, device)

    def backends(self) -> list[Backend]:
        """The backends an evaluation runs on when none is asked for."""
        return self._default_backends()

    @contextlib.contextmanager
    def _device_for(self, backend: Backend, *, turn: bool = True) -> Iterator[int]:
        """The device of `backend` with the fewest evaluations under way (ties taken in turn), counted as
        busy with one more while the caller holds it. `turn=False` (a task's check) takes the tie without
        moving the turn on, so that the evaluations that follow it still alternate."""
        devices = self._devices(backend)
        start = (self._next_device + 1) % len(devices)
        if turn:
            self._next_device = start
        turn = devices[start:] + devices[:start]
        device = min(turn, key=lambda d: self._under_way[(backend, d)])
        self._under_way[(backend, device)] += 1
        try:
            yield device
        finally:
            self._under_way[(backend, device)] -= 1

    def load(self) -> dict[str, int]:
        """The evaluations under way now, per backend and device (`cuda:1`, `interpret:0`)."""
        return {f"{backend.value}:{device}": n for (backend, device), n in sorted(self._under_way.items())}

    def fingerprint(self) -> str:
        """The environment fingerprint results of this evaluator carry (its first chosen GPU's, or the CPU's);
        known once it has started (`ready`)."""
        if self._tg is None or self.environment is None:
            raise EvaluatorError(
                "the evaluator has not started: use it inside `async with Evaluator(...)`, after ready()"
            )
        return self.environment.fingerprint(self._devices(Backend.cuda)[0] if self.environment.has_gpu else None)

    async def judge_memory(self) -> list[dict[str, Any]]:
        """What each started judge holds: its `MemoryReport` (cache of references against its budget, and the
        device's counters) as a dict, one per judge that runs.

        Raises:
            EvaluatorError: a judge died or did not answer.
        """
        reports = []
        for judge in list(self._judges.values()):
            report = await judge.memory()
            if report is not None:
                reports.append(report.model_dump())
        return reports

    # evaluation --------------------------------------------------------------------------------
    async def evaluate(
        self,
        task: Task,
        code: str,
        *,
        mode: Mode | str | None = None,
        backend: str | None = None,
        with_compile: bool = False,
        fresh_reference: bool = False,
        fresh_seeds: bool = False,
        progress: Progress | None = None,
        candidate_budget_s: float | None = None,
    ) -> Evaluation:
        """Evaluate `code` (a module defining ModelNew) against `task`. `fresh_seeds` draws new seeds for the
        weights, inputs and timing even where the mode's protocol fixes them (strict always draws them).
        `candidate_budget_s` bounds the time spent waiting on the candidate over all its phases (loading,
        trials, timing), besides each phase's own timeout: a kernel that hangs is a `timeout` within it,
        whichever phase it hangs in. The reference's own work is not counted against it.

        A failing candidate is a result with a status, never an exception. A failure of adaexplore's own
        (`infra_error`) is retried once on a fresh worker; the result says so (`provenance.attempts`).

        Raises:
            TaskError: the task's own code failed (its reference cannot be computed).
            ConfigError: a backend was asked for that this machine lacks, or mode flashinfer of a task without
                a TOLERANCE of its own.
            EvaluatorError: the evaluator could not start (see `ready`).

        A task with input sets (INPUT_SETS) is judged on each at full size (see `_input_sets`).
        """
        await self.ready(progress)
        chosen_mode = Mode(mode or self.config.mode)
        if chosen_mode is Mode.flashinfer and task.tolerance is None:
            raise ConfigError(
                f"mode flashinfer holds outputs to the task's own TOLERANCE, and task {task.name!r} declares none; "
                "tasks imported from FlashInfer-Bench definitions carry it (choose another mode for this one)"
            )

        async def one(part: Task, budget: float | None, part_progress: Progress | None) -> tuple[Evaluation, float]:
            return await self._evaluate_one(
                part,
                code,
                mode=chosen_mode,
                backend=backend,
                with_compile=with_compile,
                fresh_reference=fresh_reference,
                fresh_seeds=fresh_seeds,
                progress=part_progress,
                budget=budget,
            )

        if task.input_sets is None:
            return (await one(task, candidate_budget_s, progress))[0]
        backends = self._default_backends() if backend in (None, "auto") else self._explicit(backend)
        if Backend.cuda in backends:
            return await input_sets.evaluate_each(task, one, budget_s=candidate_budget_s, progress=progress)
        # at small sizes, the set that SMALL_SIZES names stands for all of them
        evaluation = (await one(task, candidate_budget_s, progress))[0]
        note = f"; on a GPU each of the task's {len(task.input_sets)} input sets is judged at full size"
        return evaluation.model_copy(update={"message": evaluation.message + note})

    async def _evaluate_one(
        self,
        task: Task,
        code: str,
        *,
        mode: Mode,
        backend: str | None,
        with_compile: bool,
        fresh_reference: bool,
        fresh_seeds: bool,
        progress: Progress | None,
        budget: float | None,
    ) -> tuple[Evaluation, float]:
        """One task's evaluation (see `evaluate`), and the time the candidate spent of its budget."""
        candidate_budget_s = budget
        first: Verdict | None = None
        started = time.perf_counter()
        for attempt in range(1, _ATTEMPTS + 1):
            run = Run(task, code, mode, progress)
            run.started = started  # a retry's phases and progress count from the evaluation's start
            run.candidate_budget_s = candidate_budget_s
            if fresh_seeds and not run.spec.fresh_seeds:
                run.spec = run.spec.model_copy(update={"fresh_seeds": True})
            status, message, error = await self._attempt(run, backend, with_compile, fresh_reference)
            if run.fault is None or attempt == _ATTEMPTS:
                break
            first = run.fault
            await run.report("retrying", f"retrying on a fresh worker after a failure of adaexplore's own: {message}")
            if first.judge is not None and run.judge is not None:
                await run.judge.restart(first.judge)  # type: ignore[arg-type]
        if first is not None:
            if run.fault is not None:
                message = faults.infra_twice(first, run.fault)
            else:
                message += faults.retried_note(first)
        await run.report("done", status.value)
        evaluation = result.build(
            run,
            status,
            message,
            error,
            config=self.config,
            environment=self.environment,
            sandbox=self.sandbox,
            attempts=attempt,
        )
        return evaluation, run.candidate_spent_s

    async def _attempt(
        self, run: Run, backend: str | None, with_compile: bool, fresh_reference: bool
    ) -> tuple[Status, str, Any]:
        """Run the stages once: the verdict's status, message and error detail (`run.fault` set for infra)."""
        try:
            await run.report("queued", "checking the source")
            with run.phase("static"):
                static.run(run, self.config)
            backends = self._default_backends() if backend in (None, "auto") else self._explicit(backend)
            run.planned = backends
            for chosen in backends:
                run.backends.append(chosen)
                if chosen is Backend.compile:
                    await compile_stage.run(self, run)
                else:
                    timed = chosen is Backend.cuda or self.config.time_on_cpu
                    await numerics.run(
                        self, run, chosen, timed=timed, with_compile=with_compile, fresh_reference=fresh_reference
                    )
                    if chosen is Backend.interpret:
                        await full_path.run(self, run)
                        await precision.run(self, run)
            result.settle_speed(run, Status.ok, self.config, self.environment)
            return Status.ok, result.ok_message(run), None
        except Verdict as verdict:
            if verdict.status is Status.infra_error:
                run.fault = verdict
            else:
                result.settle_speed(run, verdict.status, self.config, self.environment)
            return verdict.status, verdict.message, verdict.error

    async def check_task(self, task: Task) -> TaskWork | None:
        """Load `task` in the judge as an evaluation would: import its module, build `Model` from
        `get_init_inputs()`, draw `get_inputs()` and compute the reference outputs. A task that fails here
        would fail every evaluation, so a search checks it before it spends anything on candidates. The
        judge keeps the imported module. Returns what the reference does at its full sizes (its speed of light
        comes from it), or None where the judge could not follow it on shape-only tensors.

        Raises:
            TaskError: the task's own code failed, with the reason.
            EvaluatorError: the judge could not be asked, or the evaluator could not start (see `ready`).
        """
        await self.ready()
        if task.input_sets is not None and Backend.cuda in self._default_backends():
            works = [
                await task_check.run(self, input_sets.set_task(task, label))  # each set at full size, as its
                for label in task.input_sets  # evaluations will run it
            ]
            return works[0] if works else None
        return await task_check.run(self, task)

    def task_file(self, task: Task) -> Path:
        """The task's source where the judges can read it."""
        assert self._exchange is not None
        return workspace.task_file(self._exchange, task)

    def _job(self, run: Run, backend: Backend, exchange: Path, task_path: Path | None = None) -> JobSpec:
        """A job for a worker whose directory is `exchange`, where the candidate is written. Every worker and
        judge reads the task from one file, so the judge keeps one module and one set of references per task."""
        if task_path is None:
            task_path = self.task_file(run.task)
            (exchange / "candidate.py").write_text(run.code)
            run.exchanges.append(exchange)
        return jobs.job(run, backend, exchange, task_path, self.config)
