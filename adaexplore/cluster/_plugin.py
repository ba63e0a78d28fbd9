"""The worker side: a Dask worker plugin that holds adaexplore's evaluator, and the functions Dask tasks run.

The plugin probes the machine once (torch, triton, the GPUs, the sandbox) when the worker starts, refuses to
start where the evaluator could not, and declares the worker's resources: `adaexplore` (one unit per thread,
so that only such workers are sent evaluations) and `GPU` (one per GPU its evaluator uses). Its evaluators run
in an event loop of their own, on a thread beside the worker's, so that the worker's loop (its heartbeats)
never waits on them; a Dask task blocks its worker thread on that loop until the verdict is in. Candidates
run, as on one machine, in the evaluator's sandboxed worker processes, never in the Dask worker's own.

Each distinct set of verdict-deciding settings a client sends (`Request.protocol`) gets an evaluator of its
own, started on first use; at most two are kept, an idle one closed to make room.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
from anyio.abc import TaskGroup, TaskStatus
from distributed import WorkerPlugin, get_worker
from distributed.core import Status as WorkerStatus
from pydantic import ValidationError

from adaexplore import __version__
from adaexplore.cluster._common import GPU, PLUGIN, RESOURCE, Request, worker_command
from adaexplore.config import ExecutorConfig, Settings
from adaexplore.domain import Evaluation
from adaexplore.errors import AdaexploreError, ConfigError, EvaluatorError
from adaexplore.executor import (
    Environment,
    Evaluator,
    Progress,
    ProgressUpdate,
    SandboxPlan,
    TaskCheck,
    detect_sandbox,
    probe_environment,
    worker_env,
)

__all__ = ["EvaluatorPlugin", "describe", "run_request", "worker_settings"]

logger = logging.getLogger("adaexplore.cluster")
_KEPT = 2  # evaluators (distinct protocols) a worker keeps at once


def worker_settings() -> Settings:
    """The worker's own settings: $ADAEXPLORE_WORKER_CONFIG (a settings file) over the defaults, with
    $ADAEXPLORE_HOME, $ADAEXPLORE_SANDBOX and $ADAEXPLORE_BACKEND as everywhere.

    Raises:
        ConfigError: the settings file is missing or wrong.
    """
    path = os.environ.get("ADAEXPLORE_WORKER_CONFIG")
    return Settings.load(Path(path)) if path else Settings()


@dataclass
class _Held:
    """One evaluator, kept open by a task of the host's until `closing` is set."""

    ready: anyio.Event = field(default_factory=anyio.Event)
    closing: anyio.Event = field(default_factory=anyio.Event)
    evaluator: Evaluator | None = None
    failure: AdaexploreError | None = None
    in_flight: int = 0
    used: float = 0.0


class _Host:
    """The evaluators of one Dask worker, in the event loop of the plugin's portal thread."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.environment: Environment | None = None
        self.sandbox: SandboxPlan | None = None
        self._held: dict[str, _Held] = {}
        self._tg: TaskGroup | None = None
        self._stop = anyio.Event()
        self.served = 0  # requests answered (verdicts and task checks), for `describe`

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Probe the machine, then keep the evaluators until `stop`.

        Raises:
            ConfigError: no sandbox, or `executor.gpus` names a GPU this machine lacks.
            EvaluatorError: torch and triton cannot be imported in a worker process.
        """
        config = self.settings.executor
        self.sandbox = await detect_sandbox(self.settings)
        with anyio.move_on_after(config.load_timeout_s):
            self.environment = await probe_environment(worker_env(self.settings))
        if self.environment is None:
            raise EvaluatorError(f"a worker process did not import torch and triton within {config.load_timeout_s:g} s")
        visible = len(self.environment.gpus)
        if config.gpus is not None and max(config.gpus) >= visible:
            raise ConfigError(f"executor.gpus names GPU {max(config.gpus)}, but this worker's machine shows {visible}")
        async with anyio.create_task_group() as tg:
            self._tg = tg
            task_status.started()
            await self._stop.wait()
            for held in self._held.values():
                held.closing.set()

    async def stop(self) -> None:
        self._stop.set()

    @property
    def gpus(self) -> int:
        """The GPUs this worker's evaluators use."""
        assert self.environment is not None
        if not self.environment.has_gpu:
            return 0
        chosen = self.settings.executor.gpus
        return len(chosen) if chosen is not None else len(self.environment.gpus)

    def describe(self) -> dict[str, Any]:
        assert self.environment is not None and self.sandbox is not None
        first = (self.settings.executor.gpus or [0])[0] if self.environment.has_gpu else None
        return {
            "adaexplore": __version__,
            "environment": self.environment.model_dump(),
            "fingerprint": self.environment.fingerprint(first),
            "gpus": self.gpus,
            "sandbox": self.sandbox.kind,
            "served": self.served,
        }

    async def run(self, request: Request, progress: Progress | None) -> Evaluation | TaskCheck | None:
        held = await self._evaluator(request.protocol)
        held.in_flight += 1
        held.used = time.monotonic()
        try:
            evaluator = held.evaluator
            assert evaluator is not None
            if request.check:
                return await evaluator.check_task(request.task, request.options)
            return await evaluator.evaluate(request.task, request.code, request.options, progress=progress)
        finally:
            held.in_flight -= 1
            self.served += 1

    async def _evaluator(self, protocol: dict[str, Any]) -> _Held:
        assert self._tg is not None
        key = json.dumps(protocol, sort_keys=True)
        held = self._held.get(key)
        if held is None:
            settings = self._settings_for(protocol)
            self._make_room()
            held = self._held[key] = _Held()
            self._tg.start_soon(self._keep, held, settings)
        await held.ready.wait()
        if held.failure is not None:
            if self._held.get(key) is held:
                del self._held[key]  # the next request starts it again
            raise held.failure
        return held

    def _settings_for(self, protocol: dict[str, Any]) -> Settings:
        try:
            executor = ExecutorConfig.model_validate(self.settings.executor.model_dump() | protocol)
        except ValidationError as exc:
            problem = exc.errors()[0]
            raise ConfigError(
                f"this Dask worker refuses the client's executor settings: {'.'.join(map(str, problem['loc']))}: "
                f"{str(problem['msg']).removeprefix('Value error, ')}"
            ) from None
        return self.settings.model_copy(update={"executor": executor})

    def _make_room(self) -> None:
        idle = [(h.used, k) for k, h in self._held.items() if h.in_flight == 0 and h.evaluator is not None]
        if len(self._held) >= _KEPT and idle:
            _, key = min(idle)
            self._held.pop(key).closing.set()

    async def _keep(self, held: _Held, settings: Settings) -> None:
        try:
            async with Evaluator(settings, environment=self.environment, sandbox=self.sandbox) as evaluator:
                held.evaluator = evaluator
                held.ready.set()
                await held.closing.wait()
        except AdaexploreError as exc:
            held.failure = exc
        except Exception as exc:
            held.failure = EvaluatorError(f"the evaluator could not start on this Dask worker: {exc!r}")
        finally:
            held.ready.set()


class EvaluatorPlugin(WorkerPlugin):
    """adaexplore's worker plugin: `dask worker ADDRESS --preload adaexplore.cluster` registers it (or a
    client's `register_plugin(EvaluatorPlugin())`, on every worker of a running cluster)."""

    name = PLUGIN

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        """The plugin as it is before its setup (and as it arrives on a worker)."""
        self.host: _Host | None = None
        self.portal: anyio.from_thread.BlockingPortal | None = None
        self._portal_cm: contextlib.AbstractContextManager[anyio.from_thread.BlockingPortal] | None = None
        self._serving: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {}  # what travels to a worker is the plugin before its setup

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._reset()

    async def setup(self, worker: Any) -> None:
        _lift_nanny_thread_caps()
        settings = worker_settings()
        self._portal_cm = anyio.from_thread.start_blocking_portal()
        self.portal = self._portal_cm.__enter__()
        host = _Host(settings)
        try:
            self._serving, _ = await anyio.to_thread.run_sync(self.portal.start_task, host.serve)
        except BaseException:
            self._portal_cm.__exit__(None, None, None)
            raise
        self.host = host
        resources: dict[str, float] = {RESOURCE: float(worker.state.nthreads)}
        gpus = host.gpus
        if gpus and GPU not in worker.state.total_resources:
            resources[GPU] = float(gpus)
        await _declare(worker, resources)
        assert host.environment is not None and host.sandbox is not None
        logger.info(
            "adaexplore %s evaluates here: %s, sandbox %s, %d evaluation(s) at once",
            __version__,
            f"{gpus} GPU(s): {', '.join(host.environment.gpus)}" if gpus else "no GPU (compile and interpret)",
            host.sandbox.kind,
            worker.state.nthreads,
        )

    async def teardown(self, worker: Any) -> None:
        if self.portal is None or self._portal_cm is None:
            return
        if self.host is not None:
            host, serving = self.host, self._serving

            def stop() -> None:
                assert self.portal is not None
                self.portal.call(host.stop)
                with contextlib.suppress(Exception):
                    serving.result(timeout=60)

            await anyio.to_thread.run_sync(stop)
        cm, self._portal_cm, self.portal, self.host = self._portal_cm, None, None, None
        await anyio.to_thread.run_sync(cm.__exit__, None, None, None)


def _lift_nanny_thread_caps() -> None:
    """Drop the thread caps Dask's nanny puts in its worker's environment (`OMP_NUM_THREADS=1` and the like, its
    `distributed.nanny.pre-spawn-environ`), so that the evaluator's processes, which inherit this environment,
    are not held to one CPU thread: they are meant for Dask's own compute threads, and a judge drawing a
    KernelBench problem's inputs on the CPU would run single-threaded. A value other than the nanny's is the
    user's, and stays."""
    import dask

    for name, value in (dask.config.get("distributed.nanny.pre-spawn-environ", None) or {}).items():
        if name.endswith("_NUM_THREADS") and os.environ.get(name) == str(value):
            del os.environ[name]


async def _declare(worker: Any, resources: dict[str, float]) -> None:
    """Add resources to a worker: before it registers (a preload) they go with its registration; after, to
    the scheduler."""
    if worker.status == WorkerStatus.running:
        await worker.set_resources(**resources)
        return
    state = worker.state
    for name, quantity in resources.items():
        state.available_resources[name] = (
            state.available_resources.get(name, 0) + quantity - state.total_resources.get(name, 0)
        )
        state.total_resources[name] = quantity


def _plugin() -> tuple[Any, EvaluatorPlugin]:
    worker = get_worker()
    plugin = worker.plugins.get(PLUGIN)
    if not isinstance(plugin, EvaluatorPlugin) or plugin.host is None or plugin.portal is None:
        raise EvaluatorError(
            f"Dask worker {worker.address} has no adaexplore plugin; start workers with "
            f"`{worker_command(worker.scheduler.address)}`"
        )
    return worker, plugin


def run_request(request: Request) -> Evaluation | TaskCheck | None:
    """A Dask task: one evaluation (or task check) on this worker's evaluator; blocks its worker thread."""
    worker, plugin = _plugin()
    assert plugin.portal is not None and plugin.host is not None
    progress: Progress | None = None
    if request.progress_topic is not None:
        topic, ident = request.progress_topic, request.progress_id

        async def progress(update: ProgressUpdate) -> None:
            worker.log_event(topic, {"id": ident, **update.model_dump()})  # thread-safe: queued on its loop

    return plugin.portal.call(plugin.host.run, request, progress)


def describe(dask_worker: Any) -> dict[str, Any] | None:
    """For `Client.run`: what this worker's plugin found (versions, GPUs, fingerprint, sandbox); None without it."""
    plugin = dask_worker.plugins.get(PLUGIN)
    if not isinstance(plugin, EvaluatorPlugin) or plugin.host is None:
        return None
    return plugin.host.describe()
