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
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import anyio
from anyio.abc import TaskGroup

from adaexplore.config import Settings
from adaexplore.domain import Backend, Evaluation, Mode
from adaexplore.errors import AdaexploreError, ConfigError, EvaluatorError
from adaexplore.executor.host import _workspace as workspace
from adaexplore.executor.host._environment import Environment, check_gpus, probe_environment
from adaexplore.executor.host._pool import CorePlan, JudgeClient, default_warm_workers, plan_cores
from adaexplore.executor.host._sandbox import SandboxPlan, detect_sandbox
from adaexplore.executor.host._spawn import ProcessSpawner, Spawner
from adaexplore.executor.pipeline import _attempts as attempts
from adaexplore.executor.pipeline import _input_sets as input_sets
from adaexplore.executor.pipeline._lanes import LaneBook
from adaexplore.executor.pipeline._request import EvaluationOptions, TaskCheck
from adaexplore.executor.pipeline.stages import task_check
from adaexplore.executor.pipeline.stages.context import Progress, ProgressUpdate, Run, Verdict
from adaexplore.executor.tasks._task import Task
from adaexplore.roofline import gpu_spec

__all__ = ["Evaluator", "Progress", "ProgressUpdate"]

_Run = Run  # the name tests and older callers use
_Verdict = Verdict


@dataclass
class _Start:
    """One attempt to start the evaluator: set when it has ended, with its failure if it failed."""

    done: anyio.Event = field(default_factory=anyio.Event)
    failure: AdaexploreError | None = None


def _least_checked(checked: list[Literal["full", "small"] | None]) -> Literal["full", "small"] | None:
    """Of the input sets' checks, the one made at the smallest sizes says how far the task was checked."""
    if "small" in checked:
        return "small"
    return "full" if "full" in checked else None


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
        # the pools, judges and device locks, once started (what the stages are handed)
        self.lanes: LaneBook | None = None
        self._worker_env = workspace.worker_env(self.settings)
        self.sandbox: SandboxPlan | None = sandbox
        self._given_spawner = spawner
        self.spawner: Spawner = spawner  # type: ignore[assignment]  # the default is made on entry
        self._cpus = frozenset(cpus if cpus is not None else os.sched_getaffinity(0))
        self.cores = CorePlan()
        self.warm_workers = 0
        # the directory that holds every worker's own exchange directory, and the tasks the judges read
        self._exchange: Path | None = None
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
        workspace.kill_orphaned_sandboxes()  # first: their sandboxes hold the directories
        workspace.remove_orphaned_exchanges()
        if self.sandbox is None:
            self.sandbox = await detect_sandbox(self.settings)
        workspace.not_dumpable()
        if self._exchange is None:  # else an earlier attempt made it, and failed after
            self._exchange = Path(tempfile.mkdtemp(prefix=f"adaexplore-{os.getpid()}-", dir=workspace.exchange_root()))
            (self._exchange / "tasks").mkdir()
        self.environment = self._given_environment or await self._probe()
        check_gpus(self.config.gpus, self.environment)
        if self._given_spawner is None:
            self.spawner = ProcessSpawner(
                self._tg, sandbox=self.sandbox, exchange_root=self._exchange, settings=self.settings
            )
        if self.lanes is None:  # else an earlier attempt made them, and failed after
            gpus = (
                len(self.environment.gpus)
                if self.environment.has_gpu and self.config.backend in ("auto", "cuda")
                else 0
            )
            self.cores = plan_cores(self._cpus, gpus)
            configured = self.config.warm_workers
            self.warm_workers = configured if configured is not None else default_warm_workers(len(self._cpus), gpus)
            self.lanes = LaneBook(
                group=self._tg,
                settings=self.settings,
                environment=self.environment,
                spawner=self.spawner,
                cores=self.cores,
                warm=self.warm_workers,
                worker_env=self._worker_env,
                exchange=self._exchange,
                wait_warm=self.wait_warm,
            )
        lanes = self.lanes
        for backend in lanes.backends():
            for device in lanes.devices(backend):
                lanes.pool(backend, device).fill()
                if backend is not Backend.compile:
                    self._tg.start_soon(self._start_judge, lanes.judge(backend, device))

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
                assert self.lanes is not None
                for judge in list(self.lanes.judges.values()):
                    await judge.start()
                for pool in list(self.lanes.pools.values()):
                    await pool.wait_warm()
        except TimeoutError:
            raise EvaluatorError(f"the worker pools were not warm within {timeout:.0f} s") from None

    @staticmethod
    async def _start_judge(judge: JudgeClient) -> None:
        # A judge that fails here fails again, with its output, on the first request that needs it.
        with contextlib.suppress(EvaluatorError):
            await judge.start()

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._stack is not None and self._tg is not None
        self._tg.cancel_scope.cancel()
        await self._stack.__aexit__(kind, exc, tb)

    async def _shutdown(self) -> None:
        if self.lanes is None:
            return
        with anyio.CancelScope(shield=True):
            for pool in self.lanes.pools.values():
                await pool.aclose()
            for judge in self.lanes.judges.values():
                await judge.aclose()

    def _remove_exchange(self) -> None:
        if self._exchange is not None:
            shutil.rmtree(self._exchange, ignore_errors=True)

    def load(self) -> dict[str, int]:
        """The evaluations under way now, per backend and device (`cuda:1`, `interpret:0`)."""
        under_way = self.lanes.under_way if self.lanes is not None else {}
        return {f"{backend.value}:{device}": n for (backend, device), n in sorted(under_way.items())}

    def fingerprint(self) -> str:
        """The environment fingerprint results of this evaluator carry (its first chosen GPU's, or the CPU's);
        known once it has started (`ready`)."""
        if self._tg is None or self.environment is None or self.lanes is None:
            raise EvaluatorError(
                "the evaluator has not started: use it inside `async with Evaluator(...)`, after ready()"
            )
        gpu = self.lanes.devices(Backend.cuda)[0] if self.environment.has_gpu else None
        return self.environment.fingerprint(gpu)

    async def judge_memory(self) -> list[dict[str, Any]]:
        """What each started judge holds: its `MemoryReport` (cache of references against its budget, and the
        device's counters) as a dict, one per judge that runs.

        Raises:
            EvaluatorError: a judge died or did not answer.
        """
        reports = []
        for judge in list(self.lanes.judges.values()) if self.lanes is not None else []:
            report = await judge.memory()
            if report is not None:
                reports.append(report.model_dump())
        return reports

    # evaluation --------------------------------------------------------------------------------
    async def evaluate(
        self, task: Task, code: str, options: EvaluationOptions | None = None, *, progress: Progress | None = None
    ) -> Evaluation:
        """Evaluate `code` (a module defining ModelNew) against `task`, as `options` say (see
        `EvaluationOptions`; by default the settings'). `options.candidate_budget_s` bounds the time spent
        waiting on the candidate over all its phases (loading, trials, timing), besides each phase's own
        timeout: a kernel that hangs is a `timeout` within it, whichever phase it hangs in. The reference's own
        work is not counted against it.

        A failing candidate is a result with a status, never an exception. A failure of adaexplore's own
        (`infra_error`) is retried once on a fresh worker; the result says so (`provenance.attempts`).

        Raises:
            TaskError: the task's own code failed (its reference cannot be computed).
            ConfigError: a backend was asked for that this machine lacks, or mode flashinfer of a task without
                a TOLERANCE of its own.
            EvaluatorError: the evaluator could not start (see `ready`).

        A task with input sets (INPUT_SETS) is judged on each at full size (see `_input_sets`).
        """
        options = options or EvaluationOptions()
        backend, candidate_budget_s = options.backend, options.candidate_budget_s
        await self.ready(progress)
        chosen_mode = Mode(options.mode or self.config.mode)
        if chosen_mode is Mode.flashinfer and task.tolerance is None:
            raise ConfigError(
                f"mode flashinfer holds outputs to the task's own TOLERANCE, and task {task.name!r} declares none; "
                "tasks imported from FlashInfer-Bench definitions carry it (choose another mode for this one)"
            )

        async def one(part: Task, budget: float | None, part_progress: Progress | None) -> tuple[Evaluation, float]:
            assert self.lanes is not None and self.environment is not None
            return await attempts.evaluate(
                self.lanes,
                self.environment,
                self.sandbox,
                part,
                code,
                mode=chosen_mode,
                backend=backend,
                with_compile=options.with_compile,
                fresh_reference=options.fresh_reference,
                fresh_seeds=options.fresh_seeds,
                progress=part_progress,
                budget=budget,
                budget_wall=options.candidate_budget_wall,
                calibrations=options.calibrations,
            )

        if task.input_sets is None:
            return (await one(task, candidate_budget_s, progress))[0]
        assert self.lanes is not None
        backends = self.lanes.backends() if backend in (None, "auto") else self.lanes.explicit(backend)
        if Backend.cuda in backends:
            return await input_sets.evaluate_each(task, one, budget_s=candidate_budget_s, progress=progress)
        # at small sizes, the set that SMALL_SIZES names stands for all of them
        evaluation = (await one(task, candidate_budget_s, progress))[0]
        note = f"; on a GPU each of the task's {len(task.input_sets)} input sets is judged at full size"
        return evaluation.model_copy(update={"message": evaluation.message + note})

    async def check_task(self, task: Task, options: EvaluationOptions | None = None) -> TaskCheck:
        """Load `task` in the judge as an evaluation under `options` (its mode; by default the settings') would:
        import its module, build `Model` from `get_init_inputs()`, draw `get_inputs()` and compute the reference
        outputs. A task that fails here would fail every evaluation, so a search checks it before it spends
        anything on candidates. The judge keeps the imported module, and the reference for the task's first
        evaluation in that mode (on fresh seeds, their reference built ahead). Returns what the reference does at
        its full sizes (its speed of light comes from it; None where the judge could not follow it on shape-only
        tensors) and whether the task is degenerate (`TaskCheck`).

        Raises:
            TaskError: the task's own code failed, with the reason.
            EvaluatorError: the judge could not be asked, or the evaluator could not start (see `ready`).
        """
        await self.ready()
        lanes = self.lanes
        assert lanes is not None
        mode = Mode((options.mode if options is not None else None) or self.config.mode)
        if task.input_sets is not None and Backend.cuda in lanes.backends():
            checks = [
                await task_check.run(lanes, input_sets.set_task(task, label), mode)  # each set at full size, as
                for label in task.input_sets  # its evaluations will run it
            ]
        else:
            checks = [await task_check.run(lanes, task, mode)]
        prepared = [p for _, p in checks if p is not None]
        return TaskCheck(
            work=checks[0][0] if checks else None,
            # an input set on which the task is degenerate names the task so
            degeneracy=next((p.degeneracy for p in prepared if p.degeneracy is not None), None),
            small_degeneracy=next((p.small_degeneracy for p in prepared if p.small_degeneracy is not None), None),
            checked=_least_checked([p.degeneracy_checked for p in prepared]),
        )
