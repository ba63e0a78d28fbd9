"""The evaluator: one `evaluate(task, code)` call, from static checks to a verdict with provenance.

It never imports candidate code. Candidates run in pre-started worker processes, one fresh process per
candidate, killed by process group when done or late. References run in a judge process per device that
never imports a candidate, which also compares outputs. On a GPU the device is held by one evaluation
at a time for correctness and timing, while other candidates compile beside it.
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup
from pydantic import BaseModel, ConfigDict

import adaexplore
from adaexplore.config import Settings
from adaexplore.errors import ConfigError, EvaluatorError, TaskError
from adaexplore.executor._device_lock import DeviceLock, default_lock_dir, physical_gpu
from adaexplore.executor._environment import Environment, probe_environment
from adaexplore.executor._models import (
    Audit,
    AuditFlag,
    Backend,
    Correctness,
    ErrorDetail,
    Evaluation,
    Mode,
    Provenance,
    Seeds,
    Stats,
    Status,
    Timing,
)
from adaexplore.executor._modes import ModeSpec, mode_spec
from adaexplore.executor._policy import check_policy, defines_model_new
from adaexplore.executor._pool import JudgeClient, JudgeLost, WorkerPool
from adaexplore.executor._process import WorkerDied, WorkerProcess, WorkerTimeout
from adaexplore.executor._protocol import (
    Compare,
    Compared,
    Compiled,
    Done,
    Event,
    Failed,
    JobSpec,
    Load,
    Phase,
    Prepare,
    Prepared,
    Proceed,
    Ready,
    ReferenceTimed,
    RunCandidate,
    Stop,
    TaskFailed,
    TimeCandidate,
    Timed,
    TimeReference,
    TrialsDone,
)
from adaexplore.executor._sandbox import SandboxPlan, detect_sandbox
from adaexplore.executor._task import Task, code_hash

__all__ = ["Evaluator", "Progress", "ProgressUpdate"]

_HEARTBEAT_S = 2.0
_SIGNALS = {
    -11: "SIGSEGV (segmentation fault)",
    -6: "SIGABRT (abort)",
    -9: "SIGKILL",
    -7: "SIGBUS",
    -8: "SIGFPE",
    -4: "SIGILL",
    -15: "SIGTERM",
}

# Below this share of a forward's GPU time in the candidate's Triton kernels, the result carries a warning.
_LOW_TRITON_SHARE = 0.05


# environment variables that hold credentials, by their names
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH", re.IGNORECASE)


class ProgressUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    stage: str
    message: str
    elapsed_s: float
    done: int | None = None
    total: int | None = None


Progress = Callable[[ProgressUpdate], Awaitable[None]]


class _Verdict(Exception):
    """Ends an evaluation early with this status."""

    def __init__(self, status: Status, message: str, error: ErrorDetail | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error = error


class _Run:
    """The state of one evaluation while it runs."""

    def __init__(self, task: Task, code: str, mode: Mode, progress: Progress | None) -> None:
        self.task = task
        self.code = code.removeprefix("\ufeff")  # a byte order mark, as some editors write: Python ignores it
        self.mode = mode
        self.spec: ModeSpec = mode_spec(mode)
        self.progress = progress
        self.started = time.perf_counter()
        self.phases: dict[str, float] = {}
        self.audit = Audit()
        self.output: list[str] = []
        self.correctness: Correctness | None = None
        self.timing: Timing | None = None
        self.seeds: Seeds | None = None
        self.backends: list[Backend] = []
        self.planned: list[Backend] = []
        self.versions: dict[str, str | None] = {}
        self.compile_target: str | None = None
        self.sizes: str = "full"
        self.fingerprint = ""
        # the directories of the workers this evaluation used (their paths are scrubbed from messages)
        self.exchanges: list[Path] = []

    async def report(self, stage: str, message: str, done: int | None = None, total: int | None = None) -> None:
        if self.progress is not None:
            await self.progress(
                ProgressUpdate(
                    stage=stage,
                    message=message,
                    done=done,
                    total=total,
                    elapsed_s=round(time.perf_counter() - self.started, 3),
                )
            )

    def add_flags(self, flags: list[AuditFlag]) -> None:
        for flag in flags:
            if flag not in self.audit.flags:
                self.audit.flags.append(flag)

    @contextlib.contextmanager
    def phase(self, name: str) -> Any:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.phases[name] = round(self.phases.get(name, 0.0) + time.perf_counter() - start, 4)

    def scrub(self, text: str) -> str:
        for exchange in self.exchanges:
            text = text.replace(str(exchange / "candidate.py"), "candidate.py").replace(str(exchange), ".")
        return text


class Evaluator:
    """Evaluates candidates for tasks. Use as `async with Evaluator(settings) as evaluator:`."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.config = self.settings.executor
        self._tg: TaskGroup | None = None
        self._stack: contextlib.AsyncExitStack | None = None
        self.environment: Environment | None = None
        self._pools: dict[tuple[Backend, int], WorkerPool] = {}
        self._judges: dict[str, JudgeClient] = {}
        self._slots: dict[tuple[Backend, int], anyio.Semaphore] = {}
        self._device_locks: dict[int, DeviceLock] = {}
        self._next_device = 0
        self._worker_env = self._make_worker_env()
        self.sandbox: SandboxPlan | None = None
        # the directory that holds every worker's own exchange directory, and the tasks the judges read
        self._exchange: Path | None = None
        self._spawned = 0

    # lifecycle ---------------------------------------------------------------------------------
    async def __aenter__(self) -> Evaluator:
        self._stack = contextlib.AsyncExitStack()
        await self._stack.__aenter__()
        self._tg = await self._stack.enter_async_context(anyio.create_task_group())
        self._stack.push_async_callback(self._shutdown)
        _remove_orphaned_exchanges()
        self.sandbox = await detect_sandbox(self.settings)
        _not_dumpable()
        self._exchange = Path(tempfile.mkdtemp(prefix=f"adaexplore-{os.getpid()}-", dir=_exchange_root()))
        (self._exchange / "tasks").mkdir()
        self.environment = await probe_environment(self._worker_env)
        for backend in self._default_backends():
            for device in self._devices(backend):
                self._pool(backend, device).fill()
                if backend is not Backend.compile:
                    self._tg.start_soon(self._start_judge, self._judge(backend, device))
        return self

    async def wait_warm(self, timeout: float = 120.0) -> None:
        """Wait until no spare worker is starting or warming up and every judge is up: the next evaluation
        pays for no process start, and no start runs beside a measurement (benchmarks call this before
        measuring a warm evaluation; the evaluator before timing a reference).

        Raises:
            EvaluatorError: a judge failed to start, or the workers were not ready within `timeout`.
        """
        if self._tg is None:
            raise EvaluatorError("use the evaluator inside `async with Evaluator(...)`")
        try:
            with anyio.fail_after(timeout):
                for judge in list(self._judges.values()):
                    await judge.start()
                for pool in list(self._pools.values()):
                    await pool.wait_warm()
        except TimeoutError:
            raise EvaluatorError(f"the worker pools were not warm within {timeout:.0f} s") from None

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
            if self._exchange is not None:
                shutil.rmtree(self._exchange, ignore_errors=True)

    def _make_worker_env(self) -> dict[str, str]:
        # Workers run untrusted code: they get no credentials (API keys, tokens, passwords) of this process.
        named = self.settings.model.api_key_env  # whatever its name
        env = {k: v for k, v in os.environ.items() if not _SECRET_NAME.search(k) and k != named}
        env.pop("TRITON_INTERPRET", None)
        package_root = str(Path(adaexplore.__file__).resolve().parents[1])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def _default_backends(self) -> list[Backend]:
        assert self.environment is not None
        choice = self.config.backend
        if choice == "auto":
            return [Backend.cuda] if self.environment.has_gpu else [Backend.compile, Backend.interpret]
        backend = Backend(choice)
        if backend is Backend.cuda and not self.environment.has_gpu:
            raise ConfigError("backend 'cuda' needs a CUDA GPU, and none is visible; use 'compile' or 'interpret'")
        return [backend]

    def _devices(self, backend: Backend) -> list[int]:
        assert self.environment is not None
        return list(range(len(self.environment.gpus))) if backend is Backend.cuda else [0]

    def _spawner(self, role: str, backend: Backend, device: int) -> Callable[[], Awaitable[WorkerProcess]]:
        env = dict(self._worker_env)
        if backend is Backend.interpret and role == "candidate":
            env["TRITON_INTERPRET"] = "1"

        # Candidate workers warm up while holding the device. The judge does not wait for it: a judge
        # restarted under the lock (by the evaluation holding it) would wait forever.
        gate = self._device_lock(device) if backend is Backend.cuda and role == "candidate" else None

        async def spawn() -> WorkerProcess:
            assert self._tg is not None and self.sandbox is not None and self._exchange is not None
            self._spawned += 1
            return await WorkerProcess.start(
                self._tg,
                role=role,  # type: ignore[arg-type]
                backend=backend.value,
                device=device,
                env=env,
                output_limit=self.config.output_limit_bytes,
                gate=(lambda: gate) if gate is not None else None,
                sandbox=self.sandbox,
                exchange=self._exchange / f"{role}-{backend.value}-{device}-{self._spawned}",
                exchange_root=self._exchange,
                settings=self.settings,
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
                warm=self.config.warm_workers,
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

    def fingerprint(self) -> str:
        """The environment fingerprint results of this evaluator carry (the first GPU's, or the CPU's)."""
        if self.environment is None:
            raise EvaluatorError("use the evaluator inside `async with Evaluator(...)`")
        return self.environment.fingerprint(0 if self.environment.has_gpu else None)

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
    ) -> Evaluation:
        """Evaluate `code` (a module defining ModelNew) against `task`. `fresh_seeds` draws new seeds for the
        weights, inputs and timing even where the mode's protocol fixes them (strict always draws them).

        A failing candidate is a result with a status, never an exception.

        Raises:
            TaskError: the task's own code failed (its reference cannot be computed).
            ConfigError: a backend was asked for that this machine lacks.
        """
        if self._tg is None or self.environment is None:
            raise EvaluatorError("use the evaluator inside `async with Evaluator(...)`")
        run = _Run(task, code, Mode(mode or self.config.mode), progress)
        if fresh_seeds and not run.spec.fresh_seeds:
            run.spec = run.spec.model_copy(update={"fresh_seeds": True})
        status, message, error = Status.ok, "", None
        try:
            await run.report("queued", "checking the source")
            with run.phase("static"):
                self._static_checks(run)
            backends = self._default_backends() if backend in (None, "auto") else self._explicit(backend)
            await self._run_backends(run, backends, with_compile=with_compile, fresh_reference=fresh_reference)
            message = self._ok_message(run)
        except _Verdict as verdict:
            status, message, error = verdict.status, verdict.message, verdict.error
        await run.report("done", status.value)
        return self._result(run, status, message, error)

    async def check_task(self, task: Task) -> None:
        """Load `task` in the judge as an evaluation would: import its module, build `Model` from
        `get_init_inputs()`, draw `get_inputs()` and compute the reference outputs. A task that fails here
        would fail every evaluation, so a search checks it before it spends anything on candidates. The
        judge keeps the imported module.

        Raises:
            TaskError: the task's own code failed, with the reason.
            EvaluatorError: the judge could not be asked.
        """
        if self._tg is None or self.environment is None:
            raise EvaluatorError("use the evaluator inside `async with Evaluator(...)`")
        # the judge this machine's evaluations use: the GPU's, or the CPU's
        numeric = Backend.cuda if Backend.cuda in self._default_backends() else Backend.interpret
        run = _Run(task, "", Mode(self.config.mode), None)
        task_path = self._task_file(task)
        job = self._job(run, numeric, task_path.parent, task_path)
        device = self._pick_device(numeric)
        judge = self._judge(numeric, device)
        lock = self._device_lock(device) if numeric is Backend.cuda else None

        async def ask(command: object, timeout: float, what: str) -> None:
            # Only the task's own code runs in the judge here: its hang or its death is the task's fault.
            try:
                event = await judge.request(command, timeout)
            except JudgeLost as lost:
                if lost.timed_out:
                    raise TaskError(
                        f"task {task.name!r}: {what} took longer than {timeout:g} s; a task's code must finish "
                        "promptly (no sleeping, downloading or waiting for input)"
                    ) from None
                code = lost.returncode
                how = (
                    f"was killed by {_SIGNALS.get(code, f'signal {-code}')}"
                    if code is not None and code < 0
                    else f"exited (code {code})"
                )
                output = lost.output.strip()
                raise TaskError(
                    f"task {task.name!r}: the process running {what} {how}"
                    + (f": {output}" if output else " and wrote nothing; a task's code must not exit or crash")
                ) from None
            except EvaluatorError as exc:
                raise EvaluatorError(f"could not check task {task.name!r}: {exc}") from None
            if isinstance(event, TaskFailed):
                raise TaskError(f"task {task.name!r}: {event.message}")

        try:
            await ask(
                Load(job=job),
                self.config.load_timeout_s,
                "importing its module, building Model(*get_init_inputs()) and drawing get_inputs()",
            )
            if lock is not None:  # the forward runs on the device; no candidate is timed beside it
                await lock.acquire()
            try:
                await ask(Prepare(job_id=job.job_id), self.config.trial_timeout_s * (job.trials + 3), "Model's forward")
            finally:
                if lock is not None:
                    lock.release()
        finally:
            with anyio.CancelScope(shield=True), contextlib.suppress(EvaluatorError):
                await judge.release(job.job_id)

    def _explicit(self, backend: str) -> list[Backend]:
        assert self.environment is not None
        chosen = Backend(backend)
        if chosen is Backend.cuda and not self.environment.has_gpu:
            raise ConfigError("backend 'cuda' needs a CUDA GPU, and none is visible; use 'compile' or 'interpret'")
        return [chosen]

    def _static_checks(self, run: _Run) -> None:
        size = len(run.code.encode())
        if size > self.config.max_source_bytes:
            raise _Verdict(
                Status.rejected,
                f"the source is {size / 1e6:.1f} MB; the limit is "
                f"{self.config.max_source_bytes / 1e6:.1f} MB. Send only the module that defines ModelNew.",
            )
        if not run.code.strip():
            raise _Verdict(Status.compile_error, "the source is empty; send a module that defines class ModelNew")
        try:
            tree = ast.parse(run.code, filename="candidate.py")
        except SyntaxError as exc:
            where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
            detail = ErrorDetail(
                type="SyntaxError",
                message=f"{exc.msg} ({where})",
                phase="parse",
                traceback=f"candidate.py, {where}: {exc.msg}\n{(exc.text or '').rstrip()}",
            )
            raise _Verdict(Status.syntax_error, f"SyntaxError: {exc.msg} ({where})", detail) from exc
        violations = check_policy(tree, source=run.code) if self.config.policy_on else []
        if violations:
            run.add_flags(
                [AuditFlag(code=v.code, severity="reject", message=f"line {v.line}: {v.message}") for v in violations]
            )
            raise _Verdict(Status.rejected, f"line {violations[0].line}: {violations[0].message}")
        if not defines_model_new(tree):
            raise _Verdict(
                Status.compile_error,
                "the module defines no ModelNew; define `class ModelNew(nn.Module)` "
                "with the same constructor arguments as Model",
            )

    async def _run_backends(
        self, run: _Run, backends: list[Backend], *, with_compile: bool, fresh_reference: bool
    ) -> None:
        assert self.environment is not None
        run.planned = backends
        for backend in backends:
            run.backends.append(backend)
            if backend is Backend.compile:
                run.compile_target = "cuda:90"
                await self._compile_stage(run)
            else:
                timed = backend is Backend.cuda or self.config.time_on_cpu
                await self._numeric_stage(
                    run, backend, timed=timed, with_compile=with_compile, fresh_reference=fresh_reference
                )

    def _task_file(self, task: Task) -> Path:
        """The task's source where the judges can read it."""
        assert self._exchange is not None
        path = self._exchange / "tasks" / f"{task.hash}.py"
        if not path.exists() or path.read_text() != task.source:
            temporary = path.with_suffix(f".{secrets.token_hex(4)}.tmp")
            temporary.write_text(task.source)
            temporary.replace(path)
        return path

    def _job(self, run: _Run, backend: Backend, exchange: Path, task_path: Path | None = None) -> JobSpec:
        """A job for a worker whose directory is `exchange`, where the candidate is written. Every worker and
        judge reads the task from one file, so the judge keeps one module and one set of references per task."""
        small = backend is not Backend.cuda
        run.sizes = "small" if small else "full"
        spec = run.spec
        seeds: dict[str, Any] = {}
        if spec.fresh_seeds:
            draw = secrets.SystemRandom()
            seeds = {
                "init_seed": draw.randrange(2**31),
                "trial_seeds": [draw.randrange(2**31) for _ in range(spec.trials)],
                "timing_seed": draw.randrange(2**31),
            }
        if task_path is None:
            task_path = self._task_file(run.task)
            (exchange / "candidate.py").write_text(run.code)
            run.exchanges.append(exchange)
        return JobSpec(
            job_id=secrets.token_hex(8),
            task_path=str(task_path),
            exchange_dir=str(exchange),
            sizes=run.sizes,
            small_sizes=run.task.small_sizes if small else None,
            mode=run.mode,
            trials=spec.trials,
            cast_floats_to=spec.cast_floats_to,
            allow_tf32_matmul=spec.allow_tf32_matmul,
            allow_tf32_cudnn=spec.allow_tf32_cudnn,
            allowed_precision=run.task.allowed_precision,
            generate_on_device=spec.generate_on_device and backend is Backend.cuda,
            enforce_policy=self.config.policy_on,
            runtime_guard=not self.config.disable_guards_for_tests,
            **seeds,
        )

    @contextlib.asynccontextmanager
    async def _candidate(self, run: _Run, backend: Backend, device: int) -> AsyncIterator[tuple[WorkerProcess, Ready]]:
        pool = self._pool(backend, device)
        async with self._slots[(backend, device)]:
            await run.report("handover", f"starting the {backend.value} worker")
            try:
                with run.phase("handover"):
                    worker, ready = await pool.acquire()
            except BaseException:
                pool.fill()
                raise
            run.versions = dict(ready.versions)
            await run.report("handover", f"candidate handed to {backend.value} worker pid {worker.pid}")
            try:
                yield worker, ready
            finally:
                await worker.aclose()
                # The replacement starts now, not while this candidate was being measured.
                pool.fill()
                text = run.scrub(worker.output.text()).strip()
                if text:
                    run.output.append(text if len(run.planned) == 1 else f"[{backend.value}]\n{text}")

    async def _await(
        self, run: _Run, worker: WorkerProcess, *, timeout: float, until: tuple[type, ...], what: str
    ) -> Event:
        """Events from the worker until one of `until` (or a failure); reports progress meanwhile."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            try:
                event = await worker.receive(min(_HEARTBEAT_S, max(remaining, 0.0)))
            except WorkerTimeout:
                if time.monotonic() >= deadline:
                    raise _Verdict(
                        Status.timeout,
                        f"{what} did not finish within {timeout:.0f} s and was killed; "
                        "look for a loop that never ends or a wait on another program",
                    ) from None
                await run.report("working", f"{what} ({time.perf_counter() - run.started:.0f} s)")
                continue
            except WorkerDied as exc:
                raise self._died(run, worker, exc, what) from None
            if isinstance(event, Phase):
                if event.phase == "trial":
                    deadline = time.monotonic() + self.config.trial_timeout_s
                    what = f"trial {(event.done or 0) + 1} of {event.total}"
                elif event.phase == "timing":
                    deadline = time.monotonic() + self.config.timing_timeout_s
                    what = "timing"
                await run.report(event.phase, event.detail or what, event.done, event.total)
                continue
            if isinstance(event, Failed):
                run.add_flags(event.flags)
                run.audit.shared_memory.update(event.shared_memory)
                raise _Verdict(event.status, run.scrub(event.message), event.error)
            if isinstance(event, TaskFailed):
                raise TaskError(f"task {run.task.name!r}: {event.message}")
            if isinstance(event, until):
                if worker.over_quota():
                    raise self._died(run, worker, WorkerDied(worker.returncode), what)
                return event
            raise _Verdict(Status.infra_error, f"unexpected {event.kind} message from the worker during {what}")

    def _died(self, run: _Run, worker: WorkerProcess, exc: WorkerDied, what: str) -> _Verdict:
        if worker.violation is not None:
            return _Verdict(Status.runtime_error, f"{worker.violation} during {what}")
        code = worker.returncode
        if code == -signal.SIGXFSZ:
            return _Verdict(
                Status.runtime_error,
                f"the candidate wrote a file larger than the limit of {self.config.worker_disk_bytes / 2**20:.0f} MiB "
                f"(executor.worker_disk_bytes) during {what}",
            )
        if code is not None and code < 0:
            name = _SIGNALS.get(code, f"signal {-code}")
            return _Verdict(
                Status.crashed,
                f"the process running the candidate was killed by {name} during {what}; "
                "look for out-of-bounds memory access",
            )
        tail = run.scrub(worker.output.text())[-1500:]
        return _Verdict(
            Status.crashed,
            f"the process running the candidate exited (code {code}) during {what}. {exc.detail} {tail}".strip(),
        )

    async def _compile_stage(self, run: _Run) -> None:
        await run.report("compiling", "compiling every kernel for sm_90")
        async with self._candidate(run, Backend.compile, 0) as (worker, _):
            assert worker.exchange is not None
            job = self._job(run, Backend.compile, worker.exchange)
            with run.phase("compile_check"):
                await worker.send(
                    RunCandidate(
                        job=job,
                        candidate_path="candidate.py",
                        shared_memory_limit=self.config.shared_memory_limit,
                        require_triton=run.spec.require_triton,
                    )
                )
                compiled = await self._await(
                    run, worker, timeout=self.config.load_timeout_s, until=(Compiled,), what="loading and compiling"
                )
                assert isinstance(compiled, Compiled)
                await self._await(run, worker, timeout=30, until=(Done,), what="finishing the compile check")
        run.add_flags(compiled.flags)
        run.audit.shared_memory.update(compiled.shared_memory)
        run.audit.triton_kernels = sorted(set(run.audit.triton_kernels) | set(compiled.kernels))
        run.phases["compile"] = round(run.phases.get("compile", 0.0) + compiled.compile_s, 4)

    async def _numeric_stage(
        self, run: _Run, backend: Backend, *, timed: bool, with_compile: bool, fresh_reference: bool
    ) -> None:
        device = self._pick_device(backend)
        judge = self._judge(backend, device)
        lock = self._device_lock(device) if backend is Backend.cuda else None
        async with self._candidate(run, backend, device) as (worker, _):
            assert worker.exchange is not None
            job = self._job(run, backend, worker.exchange)
            await worker.send(
                RunCandidate(
                    job=job,
                    candidate_path="candidate.py",
                    compile_pass=backend is Backend.cuda,
                    shared_memory_limit=self.config.shared_memory_limit,
                    require_triton=run.spec.require_triton,
                )
            )
            # The judge builds the reference model and inputs on the host while the candidate compiles.
            loading = _Pending(self._ask_judge(judge, Load(job=job), self.config.load_timeout_s, run))
            assert self._tg is not None
            self._tg.start_soon(loading.run)
            try:
                compiled = await self._await(
                    run, worker, timeout=self.config.load_timeout_s, until=(Compiled,), what="loading and compiling"
                )
                assert isinstance(compiled, Compiled)
                run.phases["load"] = round(run.phases.get("load", 0.0) + compiled.load_s, 4)
                run.phases["compile"] = round(run.phases.get("compile", 0.0) + compiled.compile_s, 4)
                run.add_flags(compiled.flags)
                with run.phase("reference_load"):
                    await loading.result()
                if (
                    timed
                    and backend is Backend.cuda
                    and self._cached_reference(
                        self._reference_timing_path(run, job, device), with_compile=with_compile, fresh=fresh_reference
                    )
                    is None
                ):
                    # The reference is timed once and divides every later speedup, so it is timed with no
                    # spare worker starting up beside it.
                    await run.report("waiting", "waiting for starting workers before timing the reference")
                    with run.phase("wait_workers"):
                        try:
                            await self.wait_warm()
                        except EvaluatorError as exc:
                            raise _Verdict(Status.infra_error, str(exc)) from exc
                await run.report("waiting", "waiting for the device" if lock else "preparing the reference")
                with run.phase("wait_device"):
                    if lock is not None:
                        await lock.acquire()
                try:
                    await self._judged(
                        run,
                        worker,
                        judge,
                        job,
                        timed=timed,
                        with_compile=with_compile,
                        fresh_reference=fresh_reference,
                        device=device,
                    )
                finally:
                    if lock is not None:
                        lock.release()
            finally:
                with anyio.CancelScope(shield=True), contextlib.suppress(EvaluatorError, _Verdict, TaskError):
                    await loading.result()
                with anyio.CancelScope(shield=True), contextlib.suppress(EvaluatorError):
                    await judge.release(job.job_id)

    def _pick_device(self, backend: Backend) -> int:
        devices = self._devices(backend)
        self._next_device = (self._next_device + 1) % len(devices)
        return devices[self._next_device]

    async def _ask_judge(self, judge: JudgeClient, command: object, timeout: float, run: _Run) -> Event:
        try:
            event = await judge.request(command, timeout)
        except EvaluatorError as exc:
            raise _Verdict(Status.infra_error, str(exc)) from exc
        if isinstance(event, TaskFailed):
            raise TaskError(f"task {run.task.name!r}: {event.message}")
        return event

    async def _judged(
        self,
        run: _Run,
        worker: WorkerProcess,
        judge: JudgeClient,
        job: JobSpec,
        *,
        timed: bool,
        with_compile: bool,
        fresh_reference: bool,
        device: int,
    ) -> None:
        cfg = self.config
        await run.report("reference", "computing reference outputs")
        with run.phase("reference"):
            prepared = await self._ask_judge(
                judge, Prepare(job_id=job.job_id), cfg.trial_timeout_s * (job.trials + 3), run
            )
        assert isinstance(prepared, Prepared)
        run.seeds = Seeds(
            init=prepared.init_seed,
            trials=prepared.trial_seeds,
            timing=prepared.timing_seed,
            generator="cuda" if job.generate_on_device else "cpu",
        )
        run.add_flags(prepared.task_flags)
        judge_ready = judge.ready
        if judge_ready is not None and not run.versions.get("gpu"):
            run.versions.update({k: v for k, v in judge_ready.versions.items() if v and not run.versions.get(k)})
        await worker.send(
            Proceed(
                allow_input_mutation=prepared.reference_mutates_inputs,
                allow_aliasing=prepared.reference_aliases_inputs,
                max_output_elements=prepared.output_elements,
            )
        )
        with run.phase("trials"):
            done = await self._await(run, worker, timeout=cfg.trial_timeout_s, until=(TrialsDone,), what="trial 1")
        assert isinstance(done, TrialsDone)
        run.add_flags(done.flags)
        run.audit.triton_launches = done.triton_launches
        run.audit.triton_kernels = sorted(set(run.audit.triton_kernels) | set(done.triton_kernels))
        await run.report("judging", "comparing outputs with the reference")
        with run.phase("judge"):
            compared = await self._ask_judge(
                judge, Compare(job_id=job.job_id, outputs=done.outputs), cfg.trial_timeout_s * job.trials, run
            )
        assert isinstance(compared, Compared)
        run.correctness = Correctness(
            passed=all(r.passed for r in compared.results), trials=compared.results, tolerance=prepared.tolerances[0]
        )
        if not run.correctness.passed:
            failed = next(r for r in compared.results if not r.passed)
            await worker.send(Stop())
            raise _Verdict(
                Status.mismatch,
                f"wrong result in trial {failed.index + 1} of {len(compared.results)}: {failed.message}",
            )
        if not timed:
            await worker.send(Stop())
            return
        await self._time(
            run, worker, judge, job, with_compile=with_compile, fresh_reference=fresh_reference, device=device
        )

    async def _time(
        self,
        run: _Run,
        worker: WorkerProcess,
        judge: JudgeClient,
        job: JobSpec,
        *,
        with_compile: bool,
        fresh_reference: bool,
        device: int,
    ) -> None:
        cfg, timing = self.config, run.spec.timing
        assert self.environment is not None and run.correctness is not None
        # The reference first, while the candidate's process waits idle, rather than after the candidate's
        # timing, when that process is exiting (and tearing its CUDA context down) beside the measurement.
        with run.phase("reference_timing"):
            reference, compiled, cached = await self._reference_timing(
                run, judge, job, with_compile=with_compile, fresh=fresh_reference, device=device
            )
        recheck_at = (
            [secrets.SystemRandom().uniform(0.3, 0.999) for _ in range(cfg.recheck_reps)] if timing.fresh_inputs else []
        )
        await worker.send(
            TimeCandidate(
                timing=timing,
                budget_ms=cfg.timing_budget_ms,
                min_reps=cfg.min_reps,
                max_reps=cfg.max_reps,
                recheck_at=recheck_at,
            )
        )
        with run.phase("timing"):
            timed = await self._await(run, worker, timeout=cfg.timing_timeout_s, until=(Timed,), what="timing")
        assert isinstance(timed, Timed)
        run.add_flags(timed.flags)
        run.audit.triton_time_share = share = timed.triton_time_share
        if share is not None and share < _LOW_TRITON_SHARE:
            run.add_flags(
                [
                    AuditFlag(
                        code="little_triton_time",
                        severity="warn",
                        message=f"only {share:.1%} of a forward's GPU time is spent in the candidate's Triton "
                        "kernels: PyTorch does nearly all of the work, and the speedup is not the kernels'",
                    )
                ]
            )
        if timed.rechecks:
            with run.phase("judge"):
                rechecked = await self._ask_judge(
                    judge,
                    Compare(job_id=job.job_id, outputs=timed.rechecks, patterns=timed.recheck_patterns),
                    cfg.trial_timeout_s * len(timed.rechecks),
                    run,
                )
            assert isinstance(rechecked, Compared)
            run.correctness.rechecks = rechecked.results
            bad = next((r for r in rechecked.results if not r.passed), None)
            if bad is not None:
                run.correctness.passed = False
                raise _Verdict(
                    Status.mismatch,
                    "the output of a timed call is wrong although the trials passed: "
                    f"{bad.message}. Results must not be cached or reused across calls; every call must "
                    "compute its output from its own inputs",
                )
        statistic = timing.statistic
        run.fingerprint = self.environment.fingerprint(device)
        speedup = reference.value(statistic) / max(timed.stats.value(statistic), 1e-9)
        run.timing = Timing(
            method=timed.method,
            statistic=statistic,
            candidate=timed.stats,
            reference=reference,
            speedup=speedup,
            reference_compile=compiled,
            speedup_vs_compile=(
                compiled.value(statistic) / max(timed.stats.value(statistic), 1e-9) if compiled else None
            ),
            reference_cached=cached,
            host_bound_calls=timed.host_bound_calls,
            unseen_ms=timed.unseen_ms,
        )
        if timed.host_bound_calls > timed.stats.n // 2:
            run.add_flags(
                [
                    AuditFlag(
                        code="host_time_exceeds_device_time",
                        severity="warn",
                        message="the device stayed busy after the CUDA events on the current stream had "
                        "finished (work on other streams that the current one never waits for); that time, "
                        f"{timed.unseen_ms:.3f} ms, was added to every timed call",
                    )
                ]
            )

    def _reference_timing_path(self, run: _Run, job: JobSpec, device: int) -> Path:
        """Where the reference timing of this task, environment and protocol is cached."""
        assert self.environment is not None
        cfg, timing = self.config, run.spec.timing
        key_text = json.dumps(
            {
                "task": run.task.hash,
                "env": self.environment.fingerprint(device),
                "sizes": job.sizes,
                "mode": run.mode.value,
                "timing": timing.model_dump(),
                "budget": cfg.timing_budget_ms,
                "reps": [cfg.min_reps, cfg.max_reps],
                "cast": job.cast_floats_to,
                "tf32": [job.allow_tf32_matmul, job.allow_tf32_cudnn],
            },
            sort_keys=True,
        )
        key = hashlib.sha256(key_text.encode()).hexdigest()[:24]
        return self.settings.cache_dir / "reference-timing" / f"{key}.json"

    def _cached_reference(self, path: Path, *, with_compile: bool, fresh: bool) -> dict[str, Any] | None:
        """The cached reference timing if it holds what is asked for, else None."""
        cached: dict[str, Any] = json.loads(path.read_text()) if path.exists() and not fresh else {}
        return cached if "eager" in cached and (not with_compile or "compile" in cached) else None

    async def _reference_timing(
        self, run: _Run, judge: JudgeClient, job: JobSpec, *, with_compile: bool, fresh: bool, device: int
    ) -> tuple[Stats, Stats | None, bool]:
        cfg, timing = self.config, run.spec.timing
        path = self._reference_timing_path(run, job, device)
        cached = self._cached_reference(path, with_compile=with_compile, fresh=fresh)
        if cached is not None:
            compiled = Stats.model_validate(cached["compile"]) if with_compile else None
            return Stats.model_validate(cached["eager"]), compiled, True
        await run.report(
            "reference_timing", "timing the PyTorch reference" + (" and torch.compile" if with_compile else "")
        )
        answer = await self._ask_judge(
            judge,
            TimeReference(
                job_id=job.job_id,
                timing=timing,
                budget_ms=cfg.timing_budget_ms,
                min_reps=cfg.min_reps,
                max_reps=cfg.max_reps,
                with_compile=with_compile,
            ),
            cfg.timing_timeout_s + (cfg.load_timeout_s * 3 if with_compile else 0),
            run,
        )
        assert isinstance(answer, ReferenceTimed)
        cached = json.loads(path.read_text()) if path.exists() and not fresh else {}
        cached["eager"] = answer.stats.model_dump()
        if answer.compile_stats is not None:
            cached["compile"] = answer.compile_stats.model_dump()
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(cached))
        temporary.replace(path)
        return answer.stats, answer.compile_stats, False

    # result ------------------------------------------------------------------------------------
    def _ok_message(self, run: _Run) -> str:
        parts = []
        if run.correctness is not None:
            n = len(run.correctness.trials)
            where = "on the GPU" if Backend.cuda in run.backends else "in the interpreter at small sizes"
            parts.append(f"correct in {n}/{n} trials {where}")
        # the interpreter compiles each launch it runs for sm_90 too, and says so in a flag
        if Backend.compile in run.backends or any(f.code == "compiled_for_sm90" for f in run.audit.flags):
            sizes = run.task.small_sizes if run.sizes == "small" else None
            listed = ", ".join(f"{k}={v}" for k, v in (sizes or {}).items())
            at = f" at the small sizes ({listed}), not the task's full ones" if listed else " at the task's sizes"
            parts.append("compiles for sm_90" + at + (" (not executed)" if run.correctness is None else ""))
        if run.timing is not None:
            t = run.timing
            parts.append(
                f"{t.speedup:.2f}x the speed of eager PyTorch ({t.statistic} {t.candidate.value(t.statistic):.4g} ms "
                f"vs {t.reference.value(t.statistic):.4g} ms)"
            )
            if t.speedup_vs_compile is not None:
                parts.append(f"{t.speedup_vs_compile:.2f}x the speed of torch.compile")
        elif Backend.cuda not in run.backends:
            parts.append("no timing was taken: there is no GPU here, so speed was not measured")
        warnings = [f.message for f in run.audit.flags if f.severity == "warn"]
        if warnings:
            parts.append("warning: " + "; ".join(warnings))
        return "; ".join(parts)

    def _result(self, run: _Run, status: Status, message: str, error: ErrorDetail | None) -> Evaluation:
        versions = run.versions
        environment = self.environment
        provenance = Provenance(
            adaexplore=adaexplore.__version__,
            python=versions.get("python") or (environment.python if environment else ""),
            torch=versions.get("torch") or (environment.torch if environment else None),
            triton=versions.get("triton") or (environment.triton if environment else None),
            numpy=versions.get("numpy") or (environment.numpy if environment else None),
            gpu=versions.get("gpu"),
            driver=versions.get("driver"),
            cuda=versions.get("cuda"),
            compile_target=run.compile_target,
            environment=run.fingerprint
            or (environment.fingerprint(0 if environment.has_gpu else None) if environment else ""),
            task_hash=run.task.hash,
            code_hash=code_hash(run.code),
            sizes=run.sizes,  # type: ignore[arg-type]
            seeds=run.seeds,
            timing_method=run.timing.method if run.timing else None,
            finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
            sandbox=self.sandbox.kind if self.sandbox is not None else "none",
            sandbox_detail=versions.get("sandbox"),
        )
        run.phases["total"] = round(time.perf_counter() - run.started, 4)
        return Evaluation(
            status=status,
            message=message,
            mode=run.mode,
            backends=run.backends,
            timed=run.timing is not None,
            correctness=run.correctness,
            timing=run.timing,
            audit=run.audit,
            error=error,
            output="\n".join(run.output)[-2 * self.config.output_limit_bytes :],
            phases=run.phases,
            provenance=provenance,
        )


class _Pending:
    """An awaitable started now whose result (or exception) is collected later."""

    def __init__(self, awaitable: Awaitable[Event]) -> None:
        self._awaitable = awaitable
        self._done = anyio.Event()
        self._value: Event | None = None
        self._error: BaseException | None = None

    async def run(self) -> None:
        try:
            self._value = await self._awaitable
        except Exception as exc:
            self._error = exc
        finally:
            self._done.set()

    async def result(self) -> Event | None:
        await self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value


def _not_dumpable() -> None:
    """No process of this user may read this one's memory, environment or file descriptors (the server's keys
    and the store's connection are in them), and it leaves no core file."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(4, 0)  # PR_SET_DUMPABLE
    except (OSError, AttributeError):  # not Linux
        pass


def _remove_orphaned_exchanges() -> None:
    """Delete exchange directories left by evaluator processes that died without cleaning up."""
    for root in {_exchange_root(), tempfile.gettempdir()} - {None}:
        for directory in Path(root).glob("adaexplore-*-*"):  # type: ignore[arg-type]
            pid = directory.name.split("-")[1]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                shutil.rmtree(directory, ignore_errors=True)


def _exchange_root() -> str | None:
    """Memory-backed /dev/shm when it is there with room for large outputs, else the temporary directory."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free >= 8 << 30:
        return str(shm)
    return None
