"""The headless loop: the same tool calls an MCP client makes, with a writer in the assistant's place.

One step: `select_uct` → `expand_node` → the writer (a large step writes a module; a small step reviews and
then edits the current kernel) → `compile_and_profile` → on a failure, a rule distilled and `record_failure`.
The tree lives in the store, so a run that stops for any reason (a budget, a kill, a model error) resumes
where it stopped.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import anyio

from adaexplore import tools
from adaexplore.agent._abandon import Abandonable
from adaexplore.agent._extract import extract_code, read_step_reply, syntax_problem
from adaexplore.agent._messages import Reply
from adaexplore.agent._writers import CURRENT_STEP, Feedback, LargeRequest, SmallRequest, StepScope, Writer
from adaexplore.domain import Evaluation, Status
from adaexplore.errors import ConflictError, ModelError, RequestError, TaskError
from adaexplore.executor import EvaluationOptions, EvaluatorProtocol, ProgressUpdate, Task, TaskCheck
from adaexplore.memory import NO_GUIDANCE, check_rule_text
from adaexplore.prompts import DistillContext, KernelContext
from adaexplore.store import UsageTotals

__all__ = [
    "Budget",
    "Explorer",
    "Observer",
    "StepRecord",
    "TaskSummary",
    "rule_from_reply",
    "run_all",
]

# Error text shown to the model: the head and the tail of a long traceback.
_ERROR_CHARS = 4000


class Budget:
    """Caps shared by every task of one invocation: model tokens, dollars, and wall time."""

    def __init__(self, *, tokens: int | None = None, usd: float | None = None, seconds: float | None = None) -> None:
        self.tokens, self.usd, self.seconds = tokens, usd, seconds
        self.started = time.monotonic()
        self.used_tokens = 0
        self.used_usd = 0.0

    def charge(self, tokens: int, usd: float) -> None:
        self.used_tokens += tokens
        self.used_usd += usd

    def exhausted(self) -> str | None:
        """Why no further step may start, or None."""
        if self.tokens is not None and self.used_tokens >= self.tokens:
            return f"the token budget is spent ({self.used_tokens:,} of {self.tokens:,} tokens)"
        if self.usd is not None and self.used_usd >= self.usd:
            return f"the cost budget is spent (${self.used_usd:.4f} of ${self.usd:.4f})"
        if self.seconds is not None and time.monotonic() - self.started >= self.seconds:
            return f"the time budget is spent ({_duration(self.seconds)})"
        return None


# How long a step that met another client's step waits before choosing again.
_CONFLICT_WAIT_S = 0.1


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@dataclass
class StepRecord:
    """One step as the progress display and the summary see it."""

    step: int  # evaluations in the run after this step
    total: int
    node_id: int | None  # the new node; None when the step was given up
    parent_id: int
    action: str
    status: str | None  # the verdict; None when no code was evaluated
    speedup: float | None
    best_speedup: float | None
    best_node_id: int | None
    is_new_best: bool
    reused: bool
    problem: str | None  # why the step was given up, or what went partly wrong (edits that did not apply)
    rule: str | None  # what record_failure answered
    model_s: float
    eval_s: float
    total_s: float
    # where nothing timed them: the new kernel's and the best kernel's estimated speedups (not measurements)
    estimated_speedup: float | None = None
    best_estimated_speedup: float | None = None

    @property
    def overhead_s(self) -> float:
        return max(0.0, self.total_s - self.model_s - self.eval_s)


@dataclass
class TaskSummary:
    task_id: str
    task_name: str
    run_id: str
    status: str  # "finished", or "stopped" (resumable)
    reason: str
    steps_done: int
    steps_total: int
    counts: dict[str, int]
    best_node_id: int | None
    best_speedup: float | None  # best_kernel's number: re-measured where finish_run re-measured, else search-time
    verified: bool
    timed: bool
    best_path: list[int]
    best_file: Path | None
    usage: UsageTotals
    failed_steps: int
    rules_recorded: int
    records: list[StepRecord] = field(default_factory=list)
    measured: str = "untimed"  # where best_speedup comes from: re-measured, search-time, estimated or untimed
    tied: int = 0  # correct kernels of the same speed that were not chosen
    estimated_speedup: float | None = None  # where nothing timed the best: its estimated speedup
    task_error: str | None = None  # where the task's own code failed mid-run (the run stopped for it): why


class Observer(Protocol):
    """What the loop reports as it goes; the terminal display implements it."""

    def task_started(self, run_id: str, name: str, steps_done: int, steps_total: int) -> None: ...

    def phase(self, run_id: str, text: str) -> None: ...

    def step_done(self, run_id: str, record: StepRecord, counts: dict[str, int]) -> None: ...

    def notice(self, run_id: str, text: str) -> None: ...

    def task_finished(self, summary: TaskSummary) -> None: ...


def rule_from_reply(text: str) -> str | None:
    """The rule in a distillation reply: the last line that holds "You cannot …", cleaned up; None for
    "no guidance", an empty reply, or a rule that is not a valid rule sentence."""
    for line in reversed([ln.strip() for ln in text.splitlines() if ln.strip()]):
        bare = line.strip("-*>`\"' \t")
        if bare.lower().rstrip(".").startswith(NO_GUIDANCE):
            return None
        at = bare.find("You cannot ")
        if at >= 0:
            try:
                return check_rule_text(bare[at:].strip("`\"' "))
            except ValueError:
                return None
    return None


def _error_text(evaluation: Evaluation | None) -> str:
    if evaluation is None or evaluation.status is Status.ok:
        return ""
    parts = [evaluation.message]
    if evaluation.error and evaluation.error.traceback:
        parts.append(evaluation.error.traceback.rstrip())
    text = "\n".join(parts)
    if len(text) > _ERROR_CHARS:
        half = _ERROR_CHARS // 2
        text = f"{text[:half]}\n[… {len(text) - _ERROR_CHARS} characters cut …]\n{text[-half:]}"
    return text


def _kernel(kernel: tools.ContextKernel) -> KernelContext:
    return KernelContext(
        node_id=kernel.node_id,
        kind=kernel.kind,
        verdict=kernel.verdict,
        correct=kernel.status == Status.ok,
        code=kernel.code,
    )


class _TimedEvaluator:
    """The evaluator, with the seconds spent in it counted (the loop's own overhead excludes them)."""

    def __init__(self, inner: EvaluatorProtocol) -> None:
        self.inner = inner
        self.seconds = 0.0

    async def evaluate(
        self,
        task: Task,
        code: str,
        options: EvaluationOptions | None = None,
        *,
        progress: tools.Progress | None = None,
    ) -> Evaluation:
        start = time.perf_counter()
        try:
            return await self.inner.evaluate(task, code, options, progress=progress)
        finally:
            self.seconds += time.perf_counter() - start

    async def check_task(self, task: Task, options: EvaluationOptions | None = None) -> TaskCheck:
        return await self.inner.check_task(task, options)

    async def ready(self, progress: tools.Progress | None = None) -> None:
        await self.inner.ready(progress)

    def fingerprint(self) -> str:
        return self.inner.fingerprint()


@dataclass
class _Attempt:
    code: str | None
    problem: str | None  # why the step was given up (code is None), or a partial problem (edits skipped)
    model_s: float


class Explorer:
    """Runs search runs to their end: one task at a time per call of `run`, any number concurrently."""

    def __init__(
        self,
        svc: tools.Services,
        writer: Writer,
        *,
        budget: Budget | None = None,
        observer: Observer | None = None,
        out_dir: Path | None = None,
        memory_updates: bool | None = None,
    ) -> None:
        self._timed = _TimedEvaluator(svc.evaluator)
        self.svc = dataclasses.replace(svc, evaluator=self._timed)
        self.writer = writer
        self.budget = budget or Budget()
        self.observer = observer
        self.out_dir = out_dir or svc.settings.home / "runs"
        agent = svc.settings.agent
        self.memory_updates = agent.memory_updates if memory_updates is None else memory_updates
        self._stop: str | None = None
        # the steps (and final re-evaluations) under way, which `interrupt` abandons
        self._in_flight = Abandonable()

    def stop(self, reason: str) -> None:
        """Let every run stop after its current step (for a shared budget)."""
        self._stop = self._stop or reason

    def interrupt(self, reason: str) -> None:
        """Stop every run now (for a signal): the steps under way are abandoned, each run stops resumably with
        `reason`, and what every finished step added stays in the store."""
        self.stop(reason)
        self._in_flight.abandon()

    # ---- one run ------------------------------------------------------------------------------------
    async def run(self, run_id: str) -> TaskSummary:
        """Take steps in a run until it has its evaluations, then finish it (the final re-evaluation).

        Raises:
            NotFoundError: the run id is unknown.
            RequestError: the run is already finished.
        """
        svc = self.svc
        run = tools.get_run(svc, tools.GetRunRequest(run_id=run_id))
        if run.status == "finished":
            raise RequestError(f"run {run_id} is already finished; `adaexplore runs show {run_id}` shows its tree")
        token = CURRENT_STEP.set(StepScope(run.run_id, run.task_id))
        try:
            return await self._run(run)
        finally:
            CURRENT_STEP.reset(token)

    async def _run(self, run: tools.RunResult) -> TaskSummary:
        svc, agent = self.svc, self.svc.settings.agent
        if self.observer:
            self.observer.task_started(run.run_id, run.task_name, run.steps_done, run.steps_total)
        records: list[StepRecord] = []
        failed_in_row = failed_steps = rules = 0
        reason = ""
        task_error: str | None = None
        counts = dict(run.counts)  # kept up to date here: get_run counts the whole tree, O(nodes)
        state = run
        while True:
            state = self._refresh(state)
            if state.steps_done >= state.steps_total:
                break
            stop = self._stop or self.budget.exhausted()
            if stop:
                self.stop(stop)
                reason = stop
                break
            try:
                with self._in_flight.scope() as step:
                    record = await self._step(state)
                if step.cancelled_caught:
                    reason = self._stop or "interrupted"
                    break
            except ModelError as exc:
                reason = f"the model failed: {exc}"
                break
            except ConflictError as exc:
                # Another client on the run (an MCP server, another explore, maybe on another host) took the
                # node's last small step, or the run's remaining steps are being evaluated: choose again once
                # the store has moved on. A run that another client finished ends the explore with the conflict.
                if tools.run_record(svc, run.run_id).status == "finished":
                    raise
                if self.observer:
                    self.observer.notice(
                        run.run_id, f"another command got there first ({exc.in_cli_words()}); choosing again"
                    )
                await anyio.sleep(_CONFLICT_WAIT_S)
                continue
            except TaskError as exc:
                # the task's own code, not a kernel: this run stops (resumably), the others go on
                reason = f"the task's own code failed ({exc}); fix the task file"
                task_error = str(exc)
                break
            records.append(record)
            if record.node_id is None:
                failed_steps += 1
                failed_in_row += 1
                if self.observer:
                    self.observer.notice(run.run_id, f"step given up: {record.problem}")
                if failed_in_row >= agent.max_failed_steps:
                    if record.status == Status.infra_error:
                        reason = (
                            f"{failed_in_row} steps in a row failed in adaexplore's evaluator, through no fault of "
                            f"the kernels (last: {record.problem})"
                        )
                    else:
                        reason = (
                            f"{failed_in_row} steps in a row got no usable kernel from the model (last: "
                            f"{record.problem}); check the model and --max-tokens"
                        )
                    break
            else:
                failed_in_row = 0
                rules += record.rule is not None
                if record.status is not None:
                    counts[record.status] = counts.get(record.status, 0) + 1
            if self.observer:
                self.observer.step_done(run.run_id, record, dict(counts))
        if not reason:
            if self.observer:
                timed = state.best_speedup is not None  # untimed kernels are not re-measured
                self.observer.phase(run.run_id, "re-evaluating the best candidates" if timed else "finishing")
            with self._in_flight.scope() as finishing:
                await tools.finish_run(svc, tools.FinishRunRequest(run_id=run.run_id))
            if finishing.cancelled_caught:  # every step is in; a resume finishes it
                reason = self._stop or "interrupted"
        finished = not reason
        if not finished:
            tools.stop_run(svc, run.run_id, reason)  # kept for `runs list` and get_run until a step is added
        summary = self._summary(run.run_id, finished, reason, records, failed_steps, rules)
        summary.task_error = task_error
        return summary

    def _refresh(self, run: tools.RunResult) -> tools.RunResult:
        """The run's progress and best node re-read from the store, in constant time (the counts by status
        and the depth are left as they were)."""
        record = tools.run_record(self.svc, run.run_id)
        best = tools.node_record(self.svc, record.best_node_id) if record.best_node_id is not None else None
        return run.model_copy(
            update={
                "status": record.status,
                "steps_done": record.steps,
                "best_node_id": record.best_node_id,
                "best_speedup": best.speedup if best else None,
                "final_node_id": record.final_node_id,
            }
        )

    # ---- one step -----------------------------------------------------------------------------------
    async def _step(self, run: tools.RunResult) -> StepRecord:
        svc = self.svc
        started = time.perf_counter()
        eval_before = self._timed.seconds
        choice = tools.select_uct(svc, tools.SelectUctRequest(run_id=run.run_id))
        expansion = tools.expand_node(
            svc, tools.ExpandNodeRequest(run_id=run.run_id, node_id=choice.node_id, action=choice.action)
        )
        memory = expansion.skill_memory
        seed = f"{run.seed}:{run.steps_done}:{choice.node_id}"
        if self.observer:
            what = "a new kernel (large step)" if choice.action == "large" else "edits (small step)"
            self.observer.phase(run.run_id, f"asking for {what} at node {choice.node_id}")
        if choice.action == "large":
            attempt = await self._large(run, expansion, memory, seed)
        else:
            attempt = await self._small(run, expansion, memory, seed)
        record = StepRecord(
            step=run.steps_done,
            total=run.steps_total,
            node_id=None,
            parent_id=choice.node_id,
            action=choice.action,
            status=None,
            speedup=None,
            best_speedup=run.best_speedup,
            best_node_id=run.best_node_id,
            best_estimated_speedup=run.best_estimated_speedup,
            is_new_best=False,
            reused=False,
            problem=attempt.problem,
            rule=None,
            model_s=attempt.model_s,
            eval_s=0.0,
            total_s=0.0,
        )
        if attempt.code is not None:
            if self.observer:
                self.observer.phase(run.run_id, f"evaluating a child of node {choice.node_id}")
            result = await tools.compile_and_profile(
                svc,
                tools.CompileAndProfileRequest(code=attempt.code, expansion_id=expansion.expansion_id),
                progress=self._progress(run.run_id),
                budget="protocol",  # no client waits on a headless step: KernelBench's protocol, not an MCP call's
            )
            record.status, record.speedup, record.node_id = result.status, result.speedup, result.node_id
            record.estimated_speedup = result.estimated_speedup
            record.is_new_best, record.reused = result.is_new_best, result.reused_evaluation
            after = self._refresh(run)
            record.step, record.best_speedup, record.best_node_id = (
                after.steps_done,
                after.best_speedup,
                after.best_node_id,
            )
            record.best_estimated_speedup = after.best_estimated_speedup
            if result.node_id is None:
                record.problem = result.message  # the evaluator failed; nothing was added
            else:
                if attempt.problem:
                    tools.set_node_note(svc, result.node_id, attempt.problem)
                if self.memory_updates and result.status in svc.settings.agent.distill_statuses:
                    rule, model_s = await self._distill(run, result.node_id, attempt.code, result.evaluation)
                    record.rule, record.model_s = rule, record.model_s + model_s
        record.eval_s = self._timed.seconds - eval_before
        record.total_s = time.perf_counter() - started
        return record

    def _progress(self, run_id: str) -> Callable[[ProgressUpdate], Awaitable[None]]:
        async def report(update: ProgressUpdate) -> None:
            if self.observer:
                self.observer.phase(run_id, update.message)

        return report

    async def _large(self, run: tools.RunResult, expansion: tools.ExpandNodeResult, memory: str, seed: str) -> _Attempt:
        request = LargeRequest(
            task_id=run.task_id,
            task_name=run.task_name,
            node_id=expansion.node_id,
            instructions=expansion.instructions,
            memory=memory,
            seed=seed,
        )
        feedback: list[Feedback] = []
        model_s = 0.0
        problem = "no reply"
        attempts = self.svc.settings.agent.max_attempts
        for attempt in range(1, attempts + 1):
            start = time.perf_counter()
            reply = await self.writer.write_module(request, feedback)
            model_s += time.perf_counter() - start
            self._charge(reply)
            extracted = extract_code(reply.text)
            if extracted.code is None:
                problem = extracted.problem or "no code"
                if reply.truncated:
                    problem += " (the reply was cut off at the token limit)"
            elif reply.truncated and extracted.unterminated:
                problem = "the reply was cut off at the token limit in the middle of the module"
            elif (bad := syntax_problem(extracted.code)) is not None:
                problem = bad
            else:
                return _Attempt(extracted.code, None, model_s)
            self._notice(run.run_id, f"unusable reply ({problem}); " + _next_try(attempt, attempts))
            feedback.append(Feedback(reply.text, problem, reply.truncated))
        return _Attempt(None, problem, model_s)

    async def _small(self, run: tools.RunResult, expansion: tools.ExpandNodeResult, memory: str, seed: str) -> _Attempt:
        svc = self.svc
        assert expansion.current is not None
        current = expansion.current
        node = tools.get_node(svc, tools.GetNodeRequest(node_id=current.node_id, include_code=False))
        request = SmallRequest(
            task_id=run.task_id,
            task_name=run.task_name,
            instructions=expansion.instructions,
            task_source=expansion.task_source,
            memory=memory,
            current=_kernel(current),
            history=[_kernel(k) for k in expansion.working_memory],
            error=_error_text(node.evaluation),
            notes=tools.node_note(svc, current.node_id),
            seed=seed,
        )
        model_s = 0.0
        guidance = ""
        any_correct = any(k.status == Status.ok for k in [*expansion.working_memory, current])
        if svc.settings.agent.reviewer and any_correct:
            start = time.perf_counter()
            review = await self.writer.review(request)
            model_s += time.perf_counter() - start
            self._charge(review)
            guidance = review.text.strip()
        feedback: list[Feedback] = []
        problem = "no reply"
        attempts = svc.settings.agent.max_attempts
        for attempt in range(1, attempts + 1):
            start = time.perf_counter()
            reply = await self.writer.write_edits(request, guidance, feedback)
            model_s += time.perf_counter() - start
            self._charge(reply)
            reading = read_step_reply(current.code, reply.text, truncated=reply.truncated)
            if reading.code is not None:  # numbered edits or a whole module: either is a small step's answer
                return _Attempt(reading.code, reading.partial, model_s)
            problem = reading.problem or "no usable kernel"
            self._notice(run.run_id, f"unusable reply ({problem}); " + _next_try(attempt, attempts))
            feedback.append(Feedback(reply.text, problem, reply.truncated))
        return _Attempt(None, problem, model_s)

    async def _distill(
        self, run: tools.RunResult, node_id: int, code: str, evaluation: Evaluation
    ) -> tuple[str, float]:
        start = time.perf_counter()
        reply = await self.writer.distill(
            DistillContext(code=code, status=evaluation.status.value, error=_error_text(evaluation))
        )
        seconds = time.perf_counter() - start
        self._charge(reply)
        rule = rule_from_reply(reply.text)
        result = await tools.record_failure(
            self.svc,
            tools.RecordFailureRequest(task_id=run.task_id, node_id=node_id, rule=rule or NO_GUIDANCE),
        )
        return result.message, seconds

    def _charge(self, reply: Reply) -> None:
        usage = reply.usage
        self.budget.charge(usage.input_tokens + usage.output_tokens, usage.cost_usd)

    def _notice(self, run_id: str, text: str) -> None:
        if self.observer:
            self.observer.notice(run_id, text)

    # ---- the end ------------------------------------------------------------------------------------
    def _summary(
        self, run_id: str, finished: bool, reason: str, records: list[StepRecord], failed_steps: int, rules: int
    ) -> TaskSummary:
        svc = self.svc
        run = tools.get_run(svc, tools.GetRunRequest(run_id=run_id))
        best_id, speedup, verified, path, best_file, timed = None, None, False, [], None, False
        measured, tied, estimated = "untimed", 0, None
        if run.final_node_id is not None or run.best_node_id is not None:
            best = tools.best_kernel(svc, tools.BestKernelRequest(run_id=run_id))  # the one best every view names
            best_id, speedup, verified = best.node_id, best.speedup, best.verified
            measured, tied, estimated = best.measured, len(best.tied_node_ids), best.estimated_speedup
            node = tools.get_node(svc, tools.GetNodeRequest(node_id=best_id, include_code=False))
            timed = node.evaluation is not None and node.evaluation.timed
            path = self._path(best_id)
            folder = self.out_dir / run_id
            folder.mkdir(parents=True, exist_ok=True)
            best_file = folder / "best.py"
            best_file.write_text(best.code)
        summary = TaskSummary(
            task_id=run.task_id,
            task_name=run.task_name,
            run_id=run_id,
            status="finished" if finished else "stopped",
            reason=reason or "all steps taken",
            steps_done=run.steps_done,
            steps_total=run.steps_total,
            counts=run.counts,
            best_node_id=best_id,
            best_speedup=speedup,
            verified=verified,
            timed=timed,
            best_path=path,
            best_file=best_file,
            usage=tools.usage(svc, run_id=run_id),
            failed_steps=failed_steps,
            rules_recorded=rules,
            records=records,
            measured=measured,
            tied=tied,
            estimated_speedup=estimated,
        )
        if self.observer:
            self.observer.task_finished(summary)
        return summary

    def _path(self, node_id: int) -> list[int]:
        path: list[int] = []
        current: int | None = node_id
        while current is not None:
            path.append(current)
            current = tools.get_node(self.svc, tools.GetNodeRequest(node_id=current, include_code=False)).parent_id
        return path[::-1]


async def run_all(explorer: Explorer, run_ids: list[str], parallel: int) -> list[TaskSummary]:
    """Run several runs, `parallel` at a time; the summaries come back in the order of `run_ids`."""
    limiter = anyio.CapacityLimiter(max(1, parallel))
    results: dict[str, TaskSummary] = {}

    async def one(run_id: str) -> None:
        async with limiter:
            results[run_id] = await explorer.run(run_id)

    async with anyio.create_task_group() as group:
        for run_id in run_ids:
            group.start_soon(one, run_id)
    return [results[r] for r in run_ids]


def _next_try(attempt: int, attempts: int) -> str:
    """What follows an unusable reply: another request, or giving the step up."""
    if attempt < attempts:
        return f"asking again (attempt {attempt + 1} of {attempts})"
    return f"giving the step up after {attempts} attempts"
