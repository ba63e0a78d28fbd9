"""Deriving small sizes: candidates from the module's text, checked by running the reference in a worker of role
`sizes` (`executor/worker/judge/_size_probe.py`), on the evaluator's own process machinery.

The worker is started by the evaluator's `ProcessSpawner` in the evaluator's sandbox (`detect_sandbox` on the
same settings: no sandbox on the machine is a `ConfigError` unless `executor.sandbox` is 'none', exactly as for
candidates), with the memory and file limits of a candidate's worker, no credentials in its environment, and
`executor.load_timeout_s` to start. The task's module is written to a task folder the worker may only read;
the worker may write to its own exchange directory only. A derivation that runs past its timeout, or a worker
that dies, has its whole process group killed, and the next derivation starts a fresh worker.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
import time
from pathlib import Path
from types import TracebackType

import anyio
from anyio.abc import TaskGroup

from adaexplore.config import Settings
from adaexplore.errors import EvaluatorError
from adaexplore.executor.host import _workspace as workspace
from adaexplore.executor.host._process import WorkerDied, WorkerTimeout
from adaexplore.executor.host._sandbox import SandboxPlan, detect_sandbox
from adaexplore.executor.host._spawn import ProcessSpawner, SpawnRequest, WorkerChannel
from adaexplore.executor.tasks._small_sizes import (
    BUDGET_S,
    FULL_CHECK_BUDGET_S,
    FULL_SIZES,
    Attempt,
    Candidate,
    Derivation,
    candidates,
)
from adaexplore.executor.wire._protocol import Done, ProbeSizes, SizeTried

__all__ = ["SizeProber", "derive_small_sizes"]

_TAIL = 600  # characters of what a worker that did not start wrote, in the error


class SizeProber:
    """One size probe worker, kept for many tasks (torch is imported once); restarted after a task that hangs or
    kills it. Use as `async with SizeProber(settings) as prober:`; concurrent derivations take turns.

    `settings`: the sandbox and the workers' limits (default: the settings file and environment, as every
    command reads them). `sandbox`: the plan already found for these settings (an evaluator's), else found
    here. `threads`: torch's CPU threads in the worker (default: torch's own choice). `budget_s`: the most CPU
    seconds one forward at the chosen sizes may take; `full_check_s`: the most a check of the task at its full sizes
    may be expected to take, where every candidate makes it degenerate.

    Raises (on entry):
        ConfigError: no sandbox is available and the settings do not accept running without one.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        sandbox: SandboxPlan | None = None,
        threads: int | None = None,
        budget_s: float = BUDGET_S,
        full_check_s: float = FULL_CHECK_BUDGET_S,
    ) -> None:
        self.settings = settings if settings is not None else Settings()
        self.sandbox = sandbox
        self.threads = threads
        self.budget_s = budget_s
        self.full_check_s = full_check_s
        self._stack: contextlib.AsyncExitStack | None = None
        self._tg: TaskGroup | None = None
        self._root: Path | None = None
        self._spawner: ProcessSpawner | None = None
        self._worker: WorkerChannel | None = None
        self._count = 0
        self._one_at_a_time = anyio.Lock()  # the worker answers one request at a time

    async def __aenter__(self) -> SizeProber:
        if self.sandbox is None:
            self.sandbox = await detect_sandbox(self.settings)
        self._stack = contextlib.AsyncExitStack()
        await self._stack.__aenter__()
        root = self._root = Path(
            tempfile.mkdtemp(prefix=f"adaexplore-{os.getpid()}-sizes-", dir=workspace.exchange_root())
        )
        self._stack.callback(shutil.rmtree, root, ignore_errors=True)
        (root / "tasks").mkdir()  # what the worker reads the task from, and may not write to
        self._tg = await self._stack.enter_async_context(anyio.create_task_group())
        self._stack.push_async_callback(self._close_worker)
        self._spawner = ProcessSpawner(self._tg, sandbox=self.sandbox, exchange_root=root, settings=self.settings)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._stack is not None and self._tg is not None
        self._tg.cancel_scope.cancel()
        await self._stack.__aexit__(kind, exc, tb)

    async def _close_worker(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            await worker.aclose()

    async def _started(self) -> WorkerChannel:
        """The running worker, or a fresh one.

        Raises:
            EvaluatorError: it could not be started, or did not say it was ready in time.
        """
        if self._worker is not None:
            return self._worker
        assert self._spawner is not None and self._root is not None
        self._count += 1
        request = SpawnRequest(
            role="sizes",
            backend="compile",  # the CPU: no GPU device is shown to it
            device=0,
            env=workspace.worker_env(self.settings),
            exchange=self._root / f"w{self._count}",
        )
        try:
            worker = await self._spawner.spawn(request)
        except OSError as exc:
            raise EvaluatorError(f"the size probe could not be started: {exc}") from exc
        try:
            await worker.ready(self.settings.executor.load_timeout_s)
        except (WorkerDied, WorkerTimeout) as exc:
            tail = worker.output.text().strip()[-_TAIL:]
            await worker.aclose()
            detail = str(exc) or f"no answer within {self.settings.executor.load_timeout_s:g} s"
            raise EvaluatorError(f"the size probe did not start ({detail}){': ' + tail if tail else ''}") from exc
        except BaseException:  # cancelled while it started
            await worker.aclose()
            raise
        self._worker = worker
        return worker

    async def derive(self, source: str, *, timeout_s: float = 60.0) -> Derivation:
        """Small sizes for the module `source`, checked by running its reference; `timeout_s` bounds the
        probe's time on it (start-up excluded).

        Raises:
            EvaluatorError: the worker could not be started.
        """
        began = time.monotonic()
        unconfined = self.sandbox is not None and self.sandbox.kind == "none"
        try:
            tried, reason = candidates(source)
        except SyntaxError as exc:
            return Derivation(sizes=None, reason=f"the module does not parse: {exc.msg}", unconfined=unconfined)
        if not tried:
            return Derivation(sizes=None, reason=reason, seconds=time.monotonic() - began, unconfined=unconfined)
        assert self._root is not None
        path = self._root / "tasks" / f"task_{secrets.token_hex(6)}.py"
        async with self._one_at_a_time:
            worker = await self._started()
            path.write_text(source, encoding="utf-8")
            try:
                attempts, lost = await self._ask(worker, path, tried, timeout_s)
            finally:
                path.unlink(missing_ok=True)
        if lost is not None and len(attempts) < len(tried):
            return self._refused(source, lost, attempts, began, unconfined)
        # (lost past the candidates: in the check at the full sizes, which then counts as not made)
        kept = self._kept(attempts, began, unconfined)
        if kept is not None:
            return kept
        last = attempts[-1]
        reason = (
            f"the reference is too slow: {last.reason} ({last.how})"
            if (last.forward_s or 0.0) > self.budget_s
            else f"the reference fails at every candidate; the largest ({last.how}): {last.reason}"
        )
        return self._refused(source, reason, attempts, began, unconfined)

    def _kept(self, attempts: list[Attempt], began: float, unconfined: bool) -> Derivation | None:
        """The derivation where a candidate ran: the first that keeps the task under both draws of the weights; else,
        where every one that ran keeps it under the probe's own weights and none under the other, the first (the
        weights decide, not the sizes: said, not named); else, where every one that ran made the task degenerate
        under either, the full sizes if they keep it, or the smallest of them, named as degenerate."""
        seconds = time.monotonic() - began
        chosen = next((a for a in attempts if a.ok), None)
        smaller = [a for a in attempts if a.degenerate is not None and a.how != FULL_SIZES]
        if chosen is not None and chosen.how == FULL_SIZES:
            degenerate = smaller[0].degenerate
            assert degenerate is not None
            return Derivation(
                sizes=None,
                reason=f"at every smaller size tried the task is degenerate ({degenerate.what()}), and at its full "
                "sizes it is not",
                attempts=attempts,
                seconds=seconds,
                unconfined=unconfined,
            )
        if chosen is not None:
            return Derivation(sizes=chosen.sizes, attempts=attempts, seconds=seconds, unconfined=unconfined)
        fragile = next((a for a in attempts if a.fragile is not None), None)
        if fragile is not None and not smaller:
            # every size clean under the probe's weights and degenerate under others: the weights decide, not sizes
            return Derivation(
                sizes=fragile.sizes, attempts=attempts, seconds=seconds, unconfined=unconfined, fragile=fragile.fragile
            )
        if not smaller:
            return None
        # where some sizes are degenerate under the probe's own weights too, those only so under others are as bad
        smaller = [a for a in attempts if (a.degenerate or a.fragile) is not None and a.how != FULL_SIZES]
        full = next((a.degenerate for a in attempts if a.how == FULL_SIZES and a.degenerate is not None), None)
        return Derivation(
            sizes=smaller[0].sizes,
            attempts=attempts,
            seconds=seconds,
            unconfined=unconfined,
            degenerate=full or smaller[0].degenerate or smaller[0].fragile,
        )

    async def _ask(
        self, worker: WorkerChannel, path: Path, tried: list[Candidate], timeout_s: float
    ) -> tuple[list[Attempt], str | None]:
        """The attempts the worker answered with, and why it did not finish in time, if it did not (it is then
        closed)."""
        deadline = time.monotonic() + timeout_s
        attempts: list[Attempt] = []
        request = ProbeSizes(
            task_path=str(path),
            candidates=tried,
            budget_s=self.budget_s,
            threads=self.threads,
            full_check_s=self.full_check_s,
        )
        try:
            await worker.send(request)
            while not isinstance(event := await worker.receive(max(0.0, deadline - time.monotonic())), Done):
                if not isinstance(event, SizeTried):
                    raise WorkerDied(worker.returncode, f"the size probe answered {event.kind!r}")
                attempts.append(event.attempt)
        except (WorkerDied, WorkerTimeout) as exc:
            at = tried[len(attempts)].how if len(attempts) < len(tried) else FULL_SIZES
            await self._close_worker()
            if isinstance(exc, WorkerTimeout):
                return attempts, f"the reference took longer than {timeout_s:g} s at {at}"
            detail = worker.violation or next(iter(worker.output.text().strip().splitlines()[-1:]), "")
            code = worker.returncode
            return attempts, f"the reference's process died (code {code}) at {at}{': ' + detail if detail else ''}"
        return attempts, None

    def _refused(self, source: str, reason: str, attempts: list[Attempt], began: float, unconfined: bool) -> Derivation:
        return Derivation(
            sizes=None,
            reason=reason,
            attempts=attempts,
            seconds=time.monotonic() - began,
            unconfined=unconfined,
        )


async def derive_small_sizes(
    source: str, *, settings: Settings | None = None, sandbox: SandboxPlan | None = None, timeout_s: float = 60.0
) -> Derivation:
    """`SizeProber.derive` in a probe worker of its own, closed after.

    Raises:
        ConfigError: no sandbox is available and the settings do not accept running without one.
        EvaluatorError: the worker could not be started.
    """
    async with SizeProber(settings, sandbox=sandbox) as prober:
        derivation = await prober.derive(source, timeout_s=timeout_s)
    return derivation
