"""A bench: every problem of a suite registered as a task, searched (or one kernel replayed) as a run, and
its verdict kept as a row of the bench in the store.

Problems go through the same tools API and the same loop as `explore`. A replayed kernel is a run of one
step whose in-search verdict stands (no final re-evaluation), so it is evaluated once and stored and shown
like any other run. A problem's task and run are written down when its work starts, so a stopped bench
(Ctrl-C, a kill, a budget) resumes each pending problem with the same run and evaluates no finished one
again.
"""

from __future__ import annotations

import platform
import socket
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

import anyio

from adaexplore import __version__, tools
from adaexplore.agent import Abandonable, Explorer, Reply, Usage
from adaexplore.agent._writers import Feedback, LargeRequest, SmallRequest
from adaexplore.bench._suite import Problem, Suite
from adaexplore.domain import Evaluation, Status
from adaexplore.errors import TaskError
from adaexplore.memory import RuleCandidate
from adaexplore.prompts import DistillContext
from adaexplore.store import BenchProblemRecord, BenchRecord, ProblemVerdict

__all__ = ["TASK_ERROR", "BenchObserver", "BenchRunner", "FileWriter", "bench_provenance", "verdict_of"]

TASK_ERROR = "task_error"
NO_KERNEL = "no_kernel"


@dataclass
class FileWriter:
    """Serves a kernel file per task for a large step (the kernels of a replay directory): not a model."""

    kernels: dict[str, str]  # task id -> module text
    label: str
    is_model: bool = False

    @staticmethod
    def _reply(text: str) -> Reply:
        return Reply(text=text, finish_reason="stop", usage=Usage(0, 0, 0.0), seconds=0.0, attempts=1, model="file")

    async def write_module(self, request: LargeRequest, feedback: list[Feedback]) -> Reply:
        return self._reply(f"```python\n{self.kernels[request.task_id].rstrip()}\n```\n")

    async def review(self, request: SmallRequest) -> Reply:
        return self._reply("")

    async def write_edits(self, request: SmallRequest, guidance: str, feedback: list[Feedback]) -> Reply:
        return self._reply("")  # a replayed run has one step, a large one: no edits are ever asked for

    async def distill(self, context: DistillContext) -> Reply:
        return self._reply("no guidance")

    async def same_rule(self, text: str, candidates: list[RuleCandidate]) -> int | None:
        return None


class BenchObserver(Protocol):
    """What the bench reports as it goes: the progress display implements it (and the loop's Observer)."""

    def bench_started(self, bench: BenchRecord, total: int, done: int) -> None: ...

    def problem_started(self, problem: Problem, run_id: str | None) -> None: ...

    def problem_run(self, problem_id: int, run_id: str) -> None: ...

    def problem_phase(self, problem_id: int, text: str) -> None: ...

    def problem_done(self, row: BenchProblemRecord) -> None: ...


def bench_provenance(svc: tools.Services) -> dict[str, object]:
    """Where the bench runs: the versions, the GPU and driver, the host and the date."""
    environment = tools.machine(svc)
    facts: dict[str, object] = {
        "adaexplore": __version__,
        "python": platform.python_version(),
        "host": socket.gethostname(),
        "date": datetime.now(UTC).date().isoformat(),
    }
    if environment is not None:
        facts.update(
            torch=environment.torch,
            triton=environment.triton,
            cuda=environment.cuda,
            driver=environment.driver,
            gpu=environment.gpus[0] if environment.gpus else None,
            gpus=len(environment.gpus),
        )
    return facts


def verdict_of(evaluation: Evaluation | None, node_id: int | None, seconds: float, message: str) -> ProblemVerdict:
    """A problem's row from its chosen node's evaluation."""
    if evaluation is None:
        return ProblemVerdict(status=NO_KERNEL, message=message, seconds=seconds)
    timing = evaluation.timing
    return ProblemVerdict(
        status=evaluation.status.value,
        message=evaluation.message,
        node_id=node_id,
        speedup=timing.speedup if timing is not None and evaluation.status is Status.ok else None,
        compile_speedup=timing.speedup_vs_compile if timing is not None and evaluation.status is Status.ok else None,
        triton_share=evaluation.audit.triton_time_share,
        estimated_speedup=evaluation.estimated_speedup if evaluation.status is Status.ok else None,
        sol_fraction=evaluation.sol_fraction if evaluation.status is Status.ok else None,
        # what the audit warned of or rejected, each code once (its notes stay in the evaluation)
        flags=list(dict.fromkeys(f.code for f in evaluation.audit.flags if f.severity != "info")),
        seconds=seconds,
    )


class BenchRunner:
    """Takes a bench's pending problems to their verdicts, `parallel` at a time."""

    def __init__(
        self,
        svc: tools.Services,
        explorer: Explorer,
        bench: BenchRecord,
        suite: Suite,
        *,
        kernels: dict[int, str] | None,
        observer: BenchObserver,
        parallel: int = 1,
    ) -> None:
        self.svc, self.explorer, self.bench, self.suite = svc, explorer, bench, suite
        self.kernels = kernels  # problem id -> module text, for a replay bench; None for a search
        self.observer = observer
        self.parallel = max(1, parallel)
        self.stopped: str | None = None  # why the bench stopped short, if it did
        self._checks = Abandonable()  # the task checks under way, which `interrupt` abandons
        options = bench.options_dict
        self.steps = 1 if kernels is not None else int(options["steps"])
        self.seed: int | None = options.get("seed")
        self.with_compile = bool(options.get("with_compile"))

    def stop(self, reason: str) -> None:
        """Let every problem stop after its current step; the ones not started stay pending."""
        self.stopped = self.stopped or reason
        self.explorer.stop(reason)

    def interrupt(self, reason: str) -> None:
        """Stop every problem now (for a signal): the steps and task checks under way are abandoned, and those
        problems stay pending, their runs resumable; every finished problem and step is kept."""
        self.stopped = self.stopped or reason
        self.explorer.interrupt(reason)
        self._checks.abandon()

    async def run(self) -> None:
        rows = {r.problem_id: r for r in tools.bench_rows(self.svc, self.bench.id)}
        pending = [p for p in self.suite.problems if not rows[p.id].done]
        self.observer.bench_started(self.bench, len(self.suite.problems), len(self.suite.problems) - len(pending))
        limiter = anyio.CapacityLimiter(self.parallel)

        async def one(problem: Problem) -> None:
            async with limiter:
                if self.stopped is None:
                    await self._problem(problem, rows[problem.id])

        async with anyio.create_task_group() as group:
            for problem in pending:
                group.start_soon(one, problem)

    async def _problem(self, problem: Problem, row: BenchProblemRecord) -> None:
        started = time.perf_counter()
        if self.kernels is not None and problem.id not in self.kernels:
            self._finish(problem, verdict_of(None, None, 0.0, "no kernel for this problem in the replay directory"))
            return
        run_id = row.run_id  # set when an earlier invocation started this problem's run
        if run_id is None:
            self.observer.problem_started(problem, None)
            try:
                with self._checks.scope() as check:
                    task = await tools.create_checked_task(
                        self.svc,
                        problem.task_request(),
                        origin=f"bench:{self.suite.name}:{problem.id}:{problem.file_hash[:16]}",
                        backend=self.bench.backend,
                        mode=self.bench.mode,
                    )
                if check.cancelled_caught:
                    return  # interrupted: it stays pending
            except TaskError as exc:
                verdict = ProblemVerdict(status=TASK_ERROR, message=str(exc), seconds=time.perf_counter() - started)
                self._finish(problem, verdict)
                return
            if self.kernels is not None:
                self._writer_kernels()[task.task_id] = self.kernels[problem.id]
            run = tools.start_run(
                self.svc,
                tools.StartRunRequest(
                    task_id=task.task_id,
                    seed=self.seed,
                    total_steps=self.steps,
                    # the record keeps them as text, written from checked options; the request validates them again
                    mode=self.bench.mode,  # type: ignore[arg-type]  # a str, not a Literal
                    backend=self.bench.backend,  # type: ignore[arg-type]  # a str, not a Literal
                    model=self.explorer.writer.label,
                    with_compile=self.with_compile,
                ),
            )
            run_id = run.run_id
            tools.start_bench_problem(self.svc, self.bench.id, problem.id, task_id=task.task_id, run_id=run_id)
        else:
            self.observer.problem_started(problem, run_id)
            if self.kernels is not None:
                self._writer_kernels()[tools.run_record(self.svc, run_id).task_id] = self.kernels[problem.id]
        self.observer.problem_run(problem.id, run_id)
        if tools.run_record(self.svc, run_id).status != "finished":
            summary = await self.explorer.run(run_id)
            if summary.status != "finished":
                if self.stopped is None and summary.task_error is not None:
                    # the task's own code failed in an evaluation (it passed the task check: a draw that fails
                    # later, a reference that does not fit this GPU at its full sizes): the problem's row says
                    # so, as a task that fails its check does, and the bench goes on
                    verdict = ProblemVerdict(
                        status=TASK_ERROR, message=summary.task_error[:4000], seconds=time.perf_counter() - started
                    )
                    self._finish(problem, verdict)
                    return
                if self.stopped is None and summary.records and summary.records[-1].status == Status.infra_error:
                    # the evaluator failed on this problem alone (its run says why): a row of its own, and the
                    # bench goes on; a run stopped by the bench, a budget or the model stops the bench
                    verdict = ProblemVerdict(
                        status=Status.infra_error.value,
                        message=summary.reason[:4000],
                        seconds=time.perf_counter() - started,
                    )
                    self._finish(problem, verdict)
                    return
                self.stop(summary.reason)  # stays pending: the bench resumes it with the same run
                return
        self._finish(problem, self._verdict(run_id, time.perf_counter() - started))

    def _writer_kernels(self) -> dict[str, str]:
        writer = self.explorer.writer
        assert isinstance(writer, FileWriter)
        return writer.kernels

    def _verdict(self, run_id: str, seconds: float) -> ProblemVerdict:
        """The run's result: its final (or best correct) node, else its best attempt."""
        node_id, evaluation = tools.run_outcome(self.svc, run_id)
        if node_id is None:
            return verdict_of(None, None, seconds, "no kernel was evaluated")
        return verdict_of(evaluation, node_id, seconds, "no evaluation")

    def _finish(self, problem: Problem, verdict: ProblemVerdict) -> None:
        tools.finish_bench_problem(self.svc, self.bench.id, problem.id, verdict)
        row = next(r for r in tools.bench_rows(self.svc, self.bench.id) if r.problem_id == problem.id)
        self.observer.problem_done(row)
