"""The client side: an evaluator whose evaluations are Dask tasks on a cluster's workers.

The process that owns the store keeps every decision: it sends one task per evaluation, with the resources
it needs (`adaexplore`, and a `GPU` for `cuda`), and writes what comes back. A worker lost mid-evaluation
has its task run again on another by Dask's scheduler; one lost again and again (Dask's allowed failures),
or a cluster left without a worker that can take it, is an `infra_error` verdict, so the step adds no node
and the search goes on. A cluster that does not answer, or has no worker with adaexplore's plugin, is an
error at start: nothing is ever evaluated on this machine instead.
"""

from __future__ import annotations

import contextlib
import logging
import platform
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

import anyio
from anyio.abc import TaskGroup

from adaexplore import __version__
from adaexplore.cluster._common import GPU, RESOURCE, Request, protocol_of, require_distributed, worker_command
from adaexplore.cluster._probe import bad_address, scheduler_unanswered
from adaexplore.config import Settings
from adaexplore.domain import Backend, Evaluation, Mode, Provenance, Status
from adaexplore.errors import AdaexploreError, ConfigError, EvaluatorError
from adaexplore.executor import (
    Environment,
    EvaluationOptions,
    Evaluator,
    Progress,
    ProgressUpdate,
    Task,
    TaskCheck,
    code_hash,
)

__all__ = ["ClusterEvaluator", "open_evaluator"]

logger = logging.getLogger("adaexplore.cluster")
_WATCH_S = 1.0  # how often a waiting evaluation checks that some worker can still take it


@contextlib.asynccontextmanager
async def open_evaluator(settings: Settings, *, background: bool = False) -> AsyncIterator[Any]:
    """The evaluator the settings ask for: on the Dask cluster of `executor.cluster`, else on this machine."""
    if settings.executor.cluster is None:
        async with Evaluator(settings, start_in_background=background) as evaluator:
            yield evaluator
    else:
        async with ClusterEvaluator(settings, start_in_background=background) as evaluator:
            yield evaluator


class ClusterEvaluator:
    """`EvaluatorProtocol` on a Dask cluster. Use as `async with ClusterEvaluator(settings) as evaluator:`;
    with `start_in_background`, entering returns at once and the first call waits for the connection."""

    def __init__(self, settings: Settings, *, start_in_background: bool = False) -> None:
        assert settings.executor.cluster is not None
        self.settings = settings
        self.config = settings.executor
        self.address: str = settings.executor.cluster
        self.environment: Environment | None = None
        self.workers: dict[str, dict[str, Any]] = {}  # what each worker with the plugin said of itself at start
        self._background = start_in_background
        self._client: Any = None
        self._tg: TaskGroup | None = None
        self._stack: contextlib.AsyncExitStack | None = None
        self._started: anyio.Event | None = None
        self._failure: AdaexploreError | None = None
        self._fingerprint = ""
        self._gpu_cluster = False
        self._topic = f"adaexplore-progress-{uuid.uuid4().hex}"
        self._listeners: dict[str, Any] = {}

    # lifecycle -----------------------------------------------------------------------------------
    async def __aenter__(self) -> ClusterEvaluator:
        require_distributed()  # before anything starts, in the user's words
        self._stack = contextlib.AsyncExitStack()
        await self._stack.__aenter__()
        self._stack.push_async_callback(self._close_client)  # last, once every task has ended
        self._tg = await self._stack.enter_async_context(anyio.create_task_group())
        self._begin()
        if not self._background:
            try:
                await self.ready()
            except BaseException:
                await self.__aexit__(None, None, None)
                raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._stack is not None and self._tg is not None
        self._tg.cancel_scope.cancel()
        await self._stack.__aexit__(exc_type, exc, tb)

    async def _close_client(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await client.close(timeout=5)

    def _begin(self) -> None:
        assert self._tg is not None
        started = self._started = anyio.Event()
        self._failure = None

        async def connect() -> None:
            try:
                await self._connect()
            except AdaexploreError as exc:
                self._failure = exc
            except Exception as exc:
                self._failure = EvaluatorError(f"could not use the Dask cluster at {self.address}: {exc!r}")
            finally:
                started.set()

        self._tg.start_soon(connect)

    async def ready(self, progress: Progress | None = None) -> None:
        """Wait until the cluster answered and has a worker with adaexplore's plugin.

        Raises:
            ConfigError: the scheduler did not answer within `executor.cluster_timeout_s` (a setting that does
                not answer, as a database URL can be), no worker runs adaexplore's plugin (with the command
                that starts one), or Dask distributed is not installed.
        """
        if self._tg is None:
            raise EvaluatorError("use the cluster evaluator inside `async with ClusterEvaluator(...)`")
        if self._started is None:
            self._begin()
        assert self._started is not None
        if not self._started.is_set():
            if progress is not None:
                message = f"connecting to the Dask cluster at {self.address}"
                await progress(ProgressUpdate(stage="starting", message=message, elapsed_s=0.0))
            await self._started.wait()
        if self._failure is not None:
            failure, self._started = self._failure, None  # the next call tries again
            raise failure

    async def _connect(self) -> None:
        distributed = require_distributed()
        timeout = self.config.cluster_timeout_s
        try:
            with anyio.fail_after(timeout + 5):
                client = await distributed.Client(
                    self.address, asynchronous=True, timeout=timeout, set_as_default=False
                )
        except (OSError, TimeoutError) as exc:
            raise scheduler_unanswered(self.address, timeout, exc) from None
        except ValueError as exc:
            raise bad_address(self.address, exc) from None
        self._client = client
        with anyio.move_on_after(timeout):
            while not (ours := await self._plugin_workers()):
                await anyio.sleep(0.5)
        if not ours:
            await self._refuse(timeout)
        others = sorted(set(await self._all_workers()) - set(ours))
        if others:
            logger.warning(
                "%d Dask worker(s) of %s run without adaexplore's plugin and get no evaluations: %s; start "
                "workers with `%s`",
                len(others),
                self.address,
                ", ".join(others),
                worker_command(self.address),
            )
        described = await client.run(_describe, workers=ours)
        self.workers = {address: d for address, d in described.items() if d is not None}
        for address, facts in self.workers.items():
            if facts["adaexplore"] != __version__:
                logger.warning(
                    "Dask worker %s runs adaexplore %s, this process %s; install one version on every host",
                    address,
                    facts["adaexplore"],
                    __version__,
                )
        self._gpu_cluster = any(facts["gpus"] for facts in self.workers.values())
        chosen = [f for f in self.workers.values() if f["gpus"] or not self._gpu_cluster] or list(self.workers.values())
        self.environment = Environment.model_validate(chosen[0]["environment"])
        prints = sorted({f["fingerprint"] for f in chosen})
        # workers that differ in GPU or versions share no fingerprint, so no stored verdict is reused among them
        self._fingerprint = prints[0] if len(prints) == 1 else "mixed-" + "-".join(p[:6] for p in prints)
        client.subscribe_topic(self._topic, self._on_progress)

    async def _refuse(self, timeout: float) -> None:
        workers = await self._all_workers()
        found = f"its {len(workers)} worker(s) run without adaexplore's plugin" if workers else "it has no worker"
        raise ConfigError(
            f"the Dask cluster at {self.address} has no worker that evaluates for adaexplore after {timeout:g} s "
            f"({found}); start one on each GPU host with `{worker_command(self.address)}` "
            "(`adaexplore worker ADDRESS` prints it)"
        )

    async def _identity(self) -> dict[str, Any]:
        assert self._client is not None
        return await self._client.scheduler.identity(n_workers=-1)

    async def _all_workers(self) -> dict[str, dict[str, Any]]:
        return dict((await self._identity()).get("workers", {}))

    async def _plugin_workers(self, need: dict[str, float] | None = None) -> list[str]:
        need = need or {RESOURCE: 1}
        workers = await self._all_workers()
        return sorted(
            a for a, w in workers.items() if all(w.get("resources", {}).get(r, 0) >= n for r, n in need.items())
        )

    def fingerprint(self) -> str:
        """The fingerprint the cluster's workers give their verdicts (one for all, where they agree)."""
        if not self._fingerprint:
            raise EvaluatorError("the cluster evaluator has not connected yet: call it after ready()")
        return self._fingerprint

    # evaluation ----------------------------------------------------------------------------------
    async def evaluate(
        self, task: Task, code: str, options: EvaluationOptions | None = None, *, progress: Progress | None = None
    ) -> Evaluation:
        """`Evaluator.evaluate` on a worker of the cluster. A worker lost for good, or none left that can take
        it, is an `infra_error` verdict.

        Raises:
            TaskError: the task's own code failed (on the worker).
            ConfigError: `cuda` was asked for and no worker has a GPU, or the cluster could not be reached
                (see `ready`).
        """
        await self.ready(progress)
        request = self._request(task, code, options or EvaluationOptions(), progress is not None)
        result = await self._run(request, progress)
        assert isinstance(result, Evaluation)
        return result

    async def check_task(self, task: Task, options: EvaluationOptions | None = None) -> TaskCheck:
        """Load `task` on a worker as an evaluation under `options` would (`Evaluator.check_task`); what its
        reference does at full size, where the worker could follow it, and whether the task is degenerate.

        Raises:
            TaskError: the task's own code failed, with the reason.
            EvaluatorError: no worker could check it.
        """
        await self.ready()
        request = self._request(task, "", options or EvaluationOptions(), False).model_copy(update={"check": True})
        result = await self._run(request, None)
        if isinstance(result, Evaluation):  # the check itself was lost with its workers
            raise EvaluatorError(f"could not check task {task.name} on the Dask cluster: {result.message}")
        return result if isinstance(result, TaskCheck) else TaskCheck()

    def _request(self, task: Task, code: str, options: EvaluationOptions, report: bool) -> Request:
        backend = options.backend or self.config.backend
        if backend == Backend.cuda and not self._gpu_cluster:
            raise ConfigError(
                f"backend 'cuda' needs a CUDA GPU, and no worker of the Dask cluster at {self.address} has one; "
                "start a worker on a GPU host, or use 'compile' or 'interpret'"
            )
        # "auto" is cuda on a cluster with GPU workers (the resource sends it to one), else compile+interpret
        chosen = Backend.cuda.value if backend == "auto" and self._gpu_cluster else backend
        return Request(
            task=task,
            code=code,
            options=options.model_copy(update={"mode": Mode(options.mode or self.config.mode), "backend": chosen}),
            protocol=protocol_of(self.config),
            progress_topic=self._topic if report else None,
            progress_id=uuid.uuid4().hex,
        )

    def _resources(self, request: Request) -> dict[str, float]:
        return {RESOURCE: 1, GPU: 1} if request.options.backend == Backend.cuda else {RESOURCE: 1}

    async def _run(self, request: Request, progress: Progress | None) -> Evaluation | None:
        distributed = require_distributed()
        from adaexplore.cluster._plugin import run_request

        assert self._client is not None
        resources = self._resources(request)
        send, receive = anyio.create_memory_object_stream[dict[str, Any]](64)
        if progress is not None:
            self._listeners[request.progress_id] = send
        future = self._client.submit(
            run_request, request, resources=resources, pure=False, key=f"adaexplore-{request.progress_id}"
        )
        outcome: dict[str, Any] = {}
        try:
            async with anyio.create_task_group() as tg:

                async def wait() -> None:
                    try:
                        outcome["result"] = await future
                    except AdaexploreError as exc:  # the task's own fault, or the worker's settings: the caller's
                        outcome["error"] = exc
                    except distributed.KilledWorker as exc:
                        outcome["lost"] = _killed(exc)
                    except Exception as exc:  # the scheduler lost, a fault of ours on the worker
                        outcome["lost"] = f"the evaluation failed on the Dask cluster: {_first_line(exc)}"
                    tg.cancel_scope.cancel()

                async def watch() -> None:
                    since: float | None = None
                    while True:
                        await anyio.sleep(_WATCH_S)
                        if await self._plugin_workers(resources):
                            since = None
                            continue
                        since = since if since is not None else anyio.current_time()
                        if anyio.current_time() - since >= self.config.cluster_timeout_s:
                            what = "with a GPU " if GPU in resources else ""
                            outcome["lost"] = (
                                f"no worker {what}with adaexplore's plugin was left in the Dask cluster at "
                                f"{self.address} for {self.config.cluster_timeout_s:g} s; start one with "
                                f"`{worker_command(self.address)}`"
                            )
                            tg.cancel_scope.cancel()
                            return

                async def report(to: Progress) -> None:
                    async for update in receive:
                        with contextlib.suppress(Exception):
                            await to(ProgressUpdate.model_validate(update))

                tg.start_soon(wait)
                tg.start_soon(watch)
                if progress is not None:
                    tg.start_soon(report, progress)
        finally:
            self._listeners.pop(request.progress_id, None)
            send.close()
            receive.close()
            if not future.done():
                with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                    await self._client.cancel([future])
        if "error" in outcome:
            raise outcome["error"]
        if "lost" in outcome:
            logger.warning("evaluation of %s on %s: %s", request.task.name, self.address, outcome["lost"])
            return self._lost(request, outcome["lost"])
        return outcome.get("result")

    def _on_progress(self, event: tuple[float, dict[str, Any]]) -> None:
        _, message = event
        send = self._listeners.get(str(message.get("id")))
        if send is not None:
            with contextlib.suppress(anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                send.send_nowait({k: v for k, v in message.items() if k in ProgressUpdate.model_fields})

    def _lost(self, request: Request, message: str) -> Evaluation:
        """The verdict of an evaluation the cluster could not finish: `infra_error`, a fault of ours."""
        chosen = request.options.backend
        backends = [Backend(chosen)] if chosen is not None and chosen != "auto" else []
        environment = self.environment
        return Evaluation(
            status=Status.infra_error,
            message=message,
            mode=request.options.mode or Mode(self.config.mode),
            backends=backends,
            timed=False,
            provenance=Provenance(
                adaexplore=__version__,
                python=environment.python if environment else platform.python_version(),
                torch=environment.torch if environment else None,
                triton=environment.triton if environment else None,
                environment=self._fingerprint,
                task_hash=request.task.hash,
                code_hash=code_hash(request.code),
                sizes="full" if chosen == Backend.cuda else "small",
                finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
            ),
        )


def _describe(dask_worker: Any) -> dict[str, Any] | None:
    from adaexplore.cluster._plugin import describe

    return describe(dask_worker)


def _killed(exc: BaseException) -> str:
    worker = exc.args[1] if len(exc.args) > 1 else None
    where = f" (the last: {getattr(worker, 'address', worker)})" if worker is not None else ""
    return (
        f"the Dask workers running this evaluation died, each time it was started{where}, until Dask gave it up "
        "(KilledWorker); see those workers' logs"
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
