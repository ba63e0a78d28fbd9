"""The tools: one typed function per tool. The MCP server and the headless agent call only these.

A kernel that fails is a result with a status. An exception (`RequestError`, `NotFoundError`,
`TaskError`) means the caller erred, and its message says how to fix the call; nothing is written then.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import secrets
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from adaexplore.cluster import open_evaluator
from adaexplore.config import SearchConfig, Settings
from adaexplore.domain import Kind
from adaexplore.errors import ConflictError, RequestError
from adaexplore.executor import (
    Evaluation,
    ProgressUpdate,
    Status,
    Task,
    code_hash,
    read_task_file,
    task_from_source,
)
from adaexplore.memory import RuleJudge
from adaexplore.prompts import (
    KernelContext,
    LargeStepContext,
    SmallStepContext,
    render_large_step,
    render_small_step,
    render_with_memory,
)
from adaexplore.search import NodeStats, pool, reward, select, tie_phrase, untimed_note, working_memory
from adaexplore.store import ClaimSpec, NewEvaluation, NodeRecord, RunRecord, Store, open_store
from adaexplore.tools._best import TIE_RULE, run_best, speedup_text, tie_break_key
from adaexplore.tools._flashinfer import flashinfer_task, run_mode
from adaexplore.tools._models import (
    BestKernelRequest,
    BestKernelResult,
    CompileAndProfileRequest,
    CompileAndProfileResult,
    ContextKernel,
    CreateTaskRequest,
    CreateTaskResult,
    ExpandNodeRequest,
    ExpandNodeResult,
    FinishRunRequest,
    FinishRunResult,
    GetNodeRequest,
    GetRunRequest,
    NodeResult,
    ReevaluatedCandidate,
    RunResult,
    SelectUctRequest,
    SelectUctResult,
    StartRunRequest,
    StartRunResult,
    TrailStep,
)
from adaexplore.tools._precision import precision_context
from adaexplore.tools._step_text import step_verdict
from adaexplore.tools._task_sizes import given_sizes, sized_task

__all__ = [
    "EvaluatorLike",
    "Progress",
    "Services",
    "best_kernel",
    "compile_and_profile",
    "create_checked_task",
    "create_task",
    "expand_node",
    "finish_run",
    "get_node",
    "get_run",
    "open_services",
    "select_uct",
    "start_run",
]

Progress = Callable[[ProgressUpdate], Awaitable[None]]


class EvaluatorLike(Protocol):
    async def evaluate(
        self,
        task: Task,
        code: str,
        *,
        mode: str | None = None,
        backend: str | None = None,
        fresh_seeds: bool = False,
        progress: Progress | None = None,
        with_compile: bool = False,  # passed only for runs that time torch.compile too
        candidate_budget_s: float | None = None,  # passed where `executor.call_budget_s` is set
    ) -> Evaluation: ...

    async def check_task(self, task: Task) -> None: ...

    async def ready(self, progress: Progress | None = None) -> None:
        """Wait until it has started (it may start in the background); raises why it could not."""
        ...

    def fingerprint(self) -> str: ...


@dataclass(frozen=True)
class _UnderWay:
    """The steps of a run being evaluated now, by any process on the store, that have not yet landed. A step
    is checked against its run's total_steps and its parent's small_step_limit before its evaluation starts,
    and lands after it ends: counting the ones in between keeps concurrent calls from overshooting either
    limit together."""

    steps: int
    small: Counter[int]  # small steps, by parent node
    sent: frozenset[tuple[int, str]]  # (expansion, code hash) of the steps under way
    finishing: bool  # finish_run is re-measuring the run's best kernels

    @classmethod
    def of(cls, store: Store, run_id: str) -> _UnderWay:
        claims = store.claims(run_id)
        steps = [c for c in claims if c.kind != "finish"]
        return cls(
            steps=len(steps),
            small=Counter(c.parent_id for c in steps if c.kind == "small" and c.parent_id is not None),
            sent=frozenset((c.expansion_id, c.code_hash) for c in steps if c.expansion_id is not None and c.code_hash),
            finishing=len(steps) < len(claims),
        )


@dataclass
class Services:
    settings: Settings
    store: Store
    evaluator: EvaluatorLike
    # The third tier of rule merging; None: merge by signature and text similarity only.
    judge: RuleJudge | None = None


@contextlib.asynccontextmanager
async def open_services(
    settings: Settings, *, judge: RuleJudge | None = None, background: bool = False
) -> AsyncIterator[Services]:
    """The store and the evaluator, for as long as the caller needs them. The evaluator has started (this machine
    probed, its workers starting) when they are given; with `background` they are given at once and it starts
    beside the caller: the tools that only read never wait for it, and the first evaluations do."""
    store = open_store(settings.database_url)
    try:
        # on this machine, or on the Dask cluster that executor.cluster names
        async with open_evaluator(settings, background=background) as evaluator:
            yield Services(settings=settings, store=store, evaluator=evaluator, judge=judge)
    finally:
        store.close()


# ---- helpers -------------------------------------------------------------------------------------------
def _task(svc: Services, task_id: str) -> Task:
    record = svc.store.task(task_id)
    return task_from_source(record.source, name=record.name)


def _config(run: RunRecord) -> SearchConfig:
    return SearchConfig.model_validate_json(run.config)


def _rng(run: RunRecord, purpose: str, node_id: int) -> random.Random:
    """The random source of one decision, a function of the run's seed and its progress only, so that a
    resumed run draws what an uninterrupted one would have."""
    return random.Random(f"{run.seed}:{run.steps}:{purpose}:{node_id}")


def _verdict(result: str | None) -> str:
    """A node's verdict in one line, from its evaluation's stored result."""
    if result is None:
        return "not evaluated"
    evaluation = Evaluation.model_validate_json(result)
    return f"{evaluation.status.value}: {evaluation.message}"


def _context(svc: Services, stats: NodeStats) -> ContextKernel:
    record, result = svc.store.node_and_result(stats.id)
    return ContextKernel(
        node_id=record.id,
        kind=record.kind.value,
        status=record.status,
        speedup=record.speedup,
        verdict=_verdict(result),
        code=record.code,
    )


def _brief(kernel: ContextKernel, *, method: bool = True) -> ContextKernel:
    """A kernel of a step's context with its verdict as the step shows it, each fact once (`step_verdict`)."""
    return kernel.model_copy(update={"verdict": step_verdict(kernel.verdict, method=method)})


def _prompt_kernel(kernel: ContextKernel) -> KernelContext:
    return KernelContext(
        node_id=kernel.node_id,
        kind=kernel.kind,
        verdict=kernel.verdict,
        correct=kernel.status == Status.ok,
        code=kernel.code,
    )


# ---- tools ---------------------------------------------------------------------------------------------
def create_task(svc: Services, req: CreateTaskRequest) -> CreateTaskResult:
    """Register a task from its text or a file; the same task (by normalized source) keeps one id. The
    module's text is checked, not run (`create_checked_task` also runs it).

    Raises:
        RequestError: neither or both of source and path were given, or the file is missing.
        TaskError: the text is not a usable task module.
    """
    task, origin = _requested_task(req)
    task, note = given_sizes(task, req.small_sizes)
    if req.small_sizes is None and task.small_sizes is None:
        note += ": create_task reads the text only; create_checked_task derives small sizes"
    return _stored_task(svc, task, origin, note)


async def create_checked_task(svc: Services, req: CreateTaskRequest, *, origin: str | None = None) -> CreateTaskResult:
    """`create_task`, once the evaluator has loaded the task as an evaluation would (in its own process:
    import the module, build Model, draw the inputs). A task that fails there is not stored. `origin` says
    where the task came from, for the record (a bench's suite, problem id and file hash), where the request's
    own (text or file name) is not enough.

    Raises:
        RequestError: as create_task.
        TaskError: the text is not a usable task module, or its code fails, with the reason.
    """
    task, requested = _requested_task(req)
    task, note = await sized_task(task, req.small_sizes, svc.settings)  # derived where the module has none
    await svc.evaluator.check_task(task)
    return _stored_task(svc, task, origin or requested, note)


def _requested_task(req: CreateTaskRequest) -> tuple[Task, str]:
    given = [req.source is not None, req.path is not None, req.flashinfer_definition is not None]
    if sum(given) != 1:
        raise RequestError(
            "give the task one way: as source (the module's text), as path (a file), or as flashinfer_definition "
            "(a FlashInfer-Bench Definition file)"
        )
    if req.flashinfer_workloads is not None and req.flashinfer_definition is None:
        raise RequestError("flashinfer_workloads goes with flashinfer_definition")
    if req.flashinfer_definition is not None:
        return flashinfer_task(req.flashinfer_definition, req.flashinfer_workloads, name=req.name)
    if req.path is None:
        return task_from_source(req.source or "", name=req.name or "task"), "text"
    path = Path(req.path)
    if not path.is_file():
        what = "is a directory" if path.is_dir() else "does not exist"
        where = (
            ""
            if path.is_absolute()
            else f" (read as {path.resolve()}: a relative path starts in the folder the server runs in)"
        )
        raise RequestError(
            f"task file {req.path} {what} on the machine adaexplore runs on{where}; give an absolute path, or send "
            "its source instead"
        )
    return task_from_source(read_task_file(path), name=req.name or path.stem), f"file:{path.name}"


def _stored_task(svc: Services, task: Task, origin: str, note: str) -> CreateTaskResult:
    stored = svc.store.put_task(task.hash, task.name, task.source, origin)
    return CreateTaskResult(
        task_id=task.hash,
        name=stored.name,  # the same task registered again keeps the name it was first given
        init_params=task.init_params,
        forward_params=task.forward_params,
        small_sizes=bool(task.small_sizes),
        small_sizes_note=note,
        input_sets=list(task.input_sets or {}),
    )


def start_run(svc: Services, req: StartRunRequest) -> StartRunResult:
    """Open a search run on a task; it starts with its root.

    Raises:
        NotFoundError: the task id is unknown.
    """
    task = svc.store.task(req.task_id)
    mode = run_mode(svc.settings, req.mode, task_from_source(task.source, name=task.name))
    base = svc.settings.search.model_dump(exclude_unset=True)
    if req.preset is not None:
        base["preset"] = req.preset
    if req.total_steps is not None:
        base["total_steps"] = req.total_steps
    try:
        config = SearchConfig.model_validate(base)
    except ValidationError as exc:
        raise RequestError(f"the search settings do not combine: {exc.errors()[0]['msg']}") from exc
    seed = req.seed if req.seed is not None else secrets.randbelow(2**31)
    run = svc.store.create_run(
        req.task_id,
        config=config.model_dump_json(),
        mode=mode,
        backend=req.backend or svc.settings.executor.backend,
        model=req.model,
        seed=seed,
        with_compile=req.with_compile,
    )
    return StartRunResult(run_id=run.id, task_id=run.task_id, root_node_id=run.root_id, seed=seed, config=config)


def select_uct(svc: Services, req: SelectUctRequest) -> SelectUctResult:
    """The node to grow next and the step to take there, with the scores that decided it.

    Raises:
        NotFoundError: the run id is unknown.
    """
    run = svc.store.run(req.run_id)
    config = _config(run)
    under_way = _UnderWay.of(svc.store, run.id)
    _refuse_closed_run(run, config, under_way)
    tie_break, tie_name = tie_break_key(svc.store, run)
    view = svc.store.view(run)
    chosen = select(view, run.root_id, config, _rng(run, "select", run.root_id), tie_break)
    if chosen.action is Kind.small and under_way.small[chosen.node]:
        node = svc.store.node(chosen.node)
        if node.small_children + under_way.small[chosen.node] >= config.small_step_limit:
            # the small steps being evaluated fill the node: the rule as it will read once they land
            chosen.action, chosen.reason = Kind.large, "small-step limit (counting steps being evaluated)"
    trail = [
        TrailStep(
            node_id=d.node,
            expand_score=_finite(d.expand_score),
            best_child_id=d.best_child,
            best_child_score=_finite(d.best_child_score),
            expanded=d.expanded,
        )
        for d in chosen.trail
    ]
    reason = chosen.reason
    ties = [d for d in chosen.trail if d.tied and d.best_child is not None]
    if ties:
        said = "; ".join(
            f"at node {d.node} children {', '.join(str(i) for i in (d.best_child, *d.tied))} tie on UCT score, and "
            f"node {d.best_child} is "
            + tie_phrase(tie_break, tie_name, view.node(d.best_child), [view.node(i) for i in d.tied])
            for d in ties
            if d.best_child is not None
        )
        untimed = (
            ""
            if any(n.speedup is not None for n in view.correct_nodes())
            else " (untimed: no GPU timed this run's kernels, so every correct kernel has the same reward)"
        )
        reason = f"{reason}; {said}{untimed}"
    return SelectUctResult(
        run_id=run.id,
        node_id=chosen.node,
        action=chosen.action.value,  # type: ignore[arg-type]
        reason=reason,
        trail=trail,
        steps_done=run.steps,
        steps_total=config.total_steps,
    )


# after an untimed kernel's reward note: which kernel of a tie the search and best_kernel prefer
_TIE_NOTE = f", and among them the lowest {TIE_RULE} goes first"


def _finite(value: float | None) -> float | None:
    return value if value is not None and abs(value) != float("inf") else None


@dataclass(frozen=True)
class _StepContext:
    run: RunRecord
    node: NodeRecord
    action: Kind
    task_source: str
    current: ContextKernel | None
    working_memory: list[ContextKernel]
    pool: list[ContextKernel]
    instructions: str
    context_ids: list[int]
    skill_memory: str


def _step_context(svc: Services, req: ExpandNodeRequest) -> _StepContext:
    run = svc.store.run(req.run_id)
    node = svc.store.node(req.node_id, run_id=run.id)
    config = _config(run)
    under_way = _UnderWay.of(svc.store, run.id)
    _refuse_closed_run(run, config, under_way)
    action = Kind(req.action)
    view = svc.store.view(run)
    task = svc.store.task(run.task_id)
    _refuse_small_step_from_root(node, action)
    parsed = task_from_source(task.source, name=task.name)
    precision = precision_context(run.mode, parsed.allowed_precision, parsed.tolerance)
    if action is Kind.small:
        _refuse_full_node(node, config, under_way, "; take a large step from it, or call select_uct again")
        memory = [_context(svc, n) for n in working_memory(view, node.id, config.memory_rounds)]
        # the kernel to edit says how every kernel of the line was checked; the earlier ones leave that out
        current, history, representatives = _brief(memory[-1]), [_brief(k, method=False) for k in memory[:-1]], []
        instructions = render_small_step(
            SmallStepContext(
                task_source=parsed.model_view,
                current=_prompt_kernel(current),
                history=[_prompt_kernel(k) for k in history],
                precision=precision,
            )
        )
        context_ids = [k.node_id for k in memory]
    else:
        chosen = pool(view, node.id, config, _rng(run, "pool", node.id))
        representatives = [_brief(_context(svc, n)) for n in chosen]
        current, history = None, []
        instructions = render_large_step(
            LargeStepContext(
                task_source=parsed.model_view, pool=[_prompt_kernel(k) for k in representatives], precision=precision
            )
        )
        context_ids = [k.node_id for k in representatives]
    from adaexplore.tools._memory import GetSkillMemoryRequest, get_skill_memory  # it builds on this module

    block = get_skill_memory(svc, GetSkillMemoryRequest()).prompt or ""
    return _StepContext(
        run,
        node,
        action,
        task.source,
        current,
        history,  # the nodes before the current one: the current kernel is given once, as `current`
        representatives,
        render_with_memory(block, instructions),
        context_ids,
        block,
    )


def expand_node(svc: Services, req: ExpandNodeRequest) -> ExpandNodeResult:
    """The context for growing a node: for a small step the kernel to edit and its segment's recent history,
    for a large step the pool of representative kernels; and the instruction text. The expansion is stored,
    so that the kernel written from it joins the tree with this context recorded.

    Raises:
        NotFoundError: the run or node id is unknown.
        RequestError: the node is in another run, or cannot take this step.
    """
    step = _step_context(svc, req)
    expansion = svc.store.add_expansion(step.run.id, step.node.id, step.action, step.context_ids)
    return ExpandNodeResult(
        expansion_id=expansion.id,
        run_id=step.run.id,
        node_id=step.node.id,
        action=req.action,
        task_source=step.task_source,
        current=step.current,
        working_memory=step.working_memory,
        pool=step.pool,
        skill_memory=step.skill_memory,
        instructions=step.instructions,
    )


def step_instructions(svc: Services, req: ExpandNodeRequest) -> str:
    """The instruction text expand_node would give, read without storing anything.

    Raises:
        NotFoundError: the run or node id is unknown.
        RequestError: the node is in another run, or cannot take this step.
    """
    return _step_context(svc, req).instructions


async def compile_and_profile(
    svc: Services, req: CompileAndProfileRequest, *, progress: Progress | None = None
) -> CompileAndProfileResult:
    """Evaluate a kernel. With an expansion (or a run, parent and action) the result becomes a new node of
    the tree and its reward is back-propagated; with only a task id nothing is stored.

    Raises:
        NotFoundError: an id is unknown.
        RequestError: the target is ambiguous, or the parent is in another run or cannot take the step.
    """
    if req.expansion_id is not None:
        repeated = _repeated_step(svc, req, req.expansion_id)
        if repeated is not None:
            return repeated
    if req.expansion_id is None and req.run_id is None:
        _target(svc, req)
        return await _evaluate_step(svc, req, progress, None, None, None, [], None)
    sent = hashlib.sha256(req.code.encode()).hexdigest()
    target: tuple[RunRecord | None, int | None, Kind | None, list[int]] | None = None

    def check() -> ClaimSpec:
        # inside the claim's transaction: what the checks read cannot change before the claim is written
        nonlocal target
        target = run, parent_id, action, _ = _target(svc, req)
        assert run is not None and parent_id is not None and action is not None
        if req.expansion_id is not None and (req.expansion_id, sent) in _UnderWay.of(svc.store, run.id).sent:
            raise ConflictError(
                f"this code for expansion {req.expansion_id} is being evaluated now by an earlier call; send it "
                "again once that call has answered, and you get its result"
            )
        return ClaimSpec(
            run_id=run.id,
            parent_id=parent_id,
            kind=action.value,
            expansion_id=req.expansion_id,
            code_hash=sent if req.expansion_id is not None else None,
        )

    claim_id = svc.store.claim(check)
    assert target is not None
    try:
        return await _evaluate_step(svc, req, progress, *target, claim_id)
    finally:
        svc.store.release_claim(claim_id)  # a step that landed released it as it landed


def _repeated_step(svc: Services, req: CompileAndProfileRequest, expansion_id: int) -> CompileAndProfileResult | None:
    """A client that sends the same code for an expansion again (a retry after a timeout, say) gets the result of
    the step that already landed, not a second node."""
    expansion = svc.store.expansion(expansion_id)
    for child_id in expansion.children:
        node = svc.store.node(child_id)
        if node.code != req.code or node.evaluation_id is None:
            continue
        evaluation = Evaluation.model_validate_json(svc.store.evaluation(node.evaluation_id).result)
        best_id = svc.store.run(expansion.run_id).best_node_id
        note = untimed_note(
            evaluation.status.value, evaluation.speedup, _config(svc.store.run(expansion.run_id)).reward_cap
        )
        return CompileAndProfileResult(
            status=evaluation.status.value,
            message=f"{evaluation.message} (this code was sent for expansion {expansion_id} before: the result "
            f"of node {node.id}, no new step)" + (f" (reward {note}{_TIE_NOTE})" if note else ""),
            speedup=evaluation.speedup,
            timed=evaluation.timed,
            node_id=node.id,
            reward=node.reward,
            is_new_best=best_id == node.id,
            best_node_id=best_id,
            reused_evaluation=True,
            evaluation=evaluation,
        )
    return None


async def _evaluate_step(
    svc: Services,
    req: CompileAndProfileRequest,
    progress: Progress | None,
    run: RunRecord | None,
    parent_id: int | None,
    action: Kind | None,
    context_ids: list[int],
    claim_id: int | None,
) -> CompileAndProfileResult:
    task_id = run.task_id if run is not None else req.task_id
    assert task_id is not None
    if run is not None:
        # every kernel of a run is judged by one protocol: a step judged otherwise could win the run unchecked
        for name, asked, own in (("mode", req.mode, run.mode), ("backend", req.backend, run.backend)):
            if asked is not None and asked != own:
                raise RequestError(
                    f"run {run.id} evaluates every kernel with {name} {own or 'auto'}; drop {name} from this call "
                    f"(or evaluate the code outside the run, with task_id and no run, to try {name} {asked})"
                )
    task = _task(svc, task_id)
    mode = req.mode or (run.mode if run else None) or svc.settings.executor.mode
    backend = req.backend or (run.backend if run else None) or svc.settings.executor.backend
    config = _config(run) if run is not None else svc.settings.search
    digest = code_hash(req.code)
    with_compile = run is not None and run.with_compile
    reused, earlier = None, None
    if config.reuse_identical:
        await svc.evaluator.ready(progress)  # the fingerprint of its machine is known once it has started
        for record in svc.store.find_evaluations(task_id, digest, svc.evaluator.fingerprint(), mode):
            candidate = Evaluation.model_validate_json(record.result)
            if _same_backends(candidate, backend) and (not with_compile or _timed_compile(candidate)):
                reused, earlier = record, candidate
                break
    if earlier is not None:
        evaluation = earlier
    else:
        options: dict[str, Any] = {"with_compile": True} if with_compile else {}
        if svc.settings.executor.call_budget_s is not None:
            options["candidate_budget_s"] = svc.settings.executor.call_budget_s
        evaluation = await svc.evaluator.evaluate(
            task, req.code, mode=mode, backend=backend, progress=progress, **options
        )
    speedup = evaluation.speedup
    node: NodeRecord | None = None
    score = None
    best_id = run.best_node_id if run is not None else None
    if run is not None and evaluation.status is not Status.infra_error:
        assert parent_id is not None and action is not None
        score = reward(evaluation.status.value, speedup, config.reward_cap)
        stored: NewEvaluation | int = (
            reused.id
            if reused is not None
            else NewEvaluation(
                code_hash=digest,
                environment=evaluation.provenance.environment,
                mode=mode,
                status=evaluation.status.value,
                speedup=speedup,
                result=evaluation.model_dump_json(),
            )
        )
        node = svc.store.add_child(
            run.id,
            parent_id,
            action,
            code=req.code,
            code_hash=digest,
            context_ids=context_ids,
            task_id=task_id,
            evaluation=stored,
            reward=score,
            expansion_id=req.expansion_id,
            claim_id=claim_id,
        )
        best_id = svc.store.run(run.id).best_node_id
    message = evaluation.message
    if run is not None and node is None:
        message += " (not added to the tree: the evaluator failed, not the kernel; try again)"
    note = untimed_note(evaluation.status.value, speedup, config.reward_cap) if score is not None else None
    if note:
        message += f" (reward {note}{_TIE_NOTE})"
    return CompileAndProfileResult(
        status=evaluation.status.value,
        message=message,
        speedup=speedup,
        timed=evaluation.timed,
        node_id=node.id if node else None,
        reward=score,
        is_new_best=node is not None and best_id == node.id,
        best_node_id=best_id,
        reused_evaluation=reused is not None,
        evaluation=evaluation,
    )


def _timed_compile(evaluation: Evaluation) -> bool:
    """Whether an evaluation holds torch.compile's timing, or could not have (it was not timed at all)."""
    return evaluation.timing is None or evaluation.timing.speedup_vs_compile is not None


def _same_backends(evaluation: Evaluation, backend: str | None) -> bool:
    """Whether a stored verdict came from the backends a new evaluation asked for `backend` would use: the
    machine's automatic path (the GPU, or compile then interpret), or exactly the one named."""
    used = [b.value for b in evaluation.backends]
    if backend in (None, "auto"):
        return used in (["cuda"], ["compile", "interpret"])
    return used == [backend]


def _target(
    svc: Services, req: CompileAndProfileRequest
) -> tuple[RunRecord | None, int | None, Kind | None, list[int]]:
    if req.expansion_id is not None:
        if req.run_id is not None or req.parent_id is not None or req.action is not None:
            raise RequestError("give expansion_id alone, or run_id with parent_id and action, not both")
        expansion = svc.store.expansion(req.expansion_id)
        run = svc.store.run(expansion.run_id)
        under_way = _UnderWay.of(svc.store, run.id)
        _refuse_closed_run(run, _config(run), under_way)
        parent = svc.store.node(expansion.node_id, run_id=run.id)
        if expansion.action is Kind.small:
            # another client's small step from this node may have landed, or be under way, since this
            # expansion was handed out
            _refuse_full_node(
                parent, _config(run), under_way, f" since expansion {expansion.id} was made; call select_uct again"
            )
        _refuse_other_task(req, run)
        return run, expansion.node_id, expansion.action, expansion.context_ids
    if req.run_id is not None:
        if req.parent_id is None or req.action is None:
            raise RequestError("with run_id, give parent_id and action (or use the expansion_id from expand_node)")
        run = svc.store.run(req.run_id)
        under_way = _UnderWay.of(svc.store, run.id)
        _refuse_closed_run(run, _config(run), under_way)
        _refuse_other_task(req, run)
        parent = svc.store.node(req.parent_id, run_id=run.id)
        action = Kind(req.action)
        _refuse_small_step_from_root(parent, action)
        if action is Kind.small:
            _refuse_full_node(parent, _config(run), under_way, "; take a large step from it")
        return run, parent.id, action, []
    if req.task_id is None:
        raise RequestError(
            "say what to evaluate against: expansion_id (from expand_node), run_id with parent_id and "
            "action, or task_id alone"
        )
    svc.store.task(req.task_id)
    return None, None, None, []


def _refuse_other_task(req: CompileAndProfileRequest, run: RunRecord) -> None:
    if req.task_id is not None and req.task_id != run.task_id:
        raise RequestError(
            f"task_id {req.task_id} is not the task of run {run.id} ({run.task_id}); drop task_id to add to the "
            "run, or give task_id alone to evaluate without a tree"
        )


def _refuse_closed_run(run: RunRecord, config: SearchConfig, under_way: _UnderWay) -> None:
    """A finished run, or one whose steps are all taken or being evaluated, takes no more (nothing is written
    or evaluated)."""
    # `cli`: the same facts for the command line, whose explore adds what to do in its own words
    if run.status == "finished":
        raise ConflictError(
            f"run {run.id} is finished; best_kernel gives its result, and start_run opens a new search",
            cli=f"run {run.id} is finished",
        )
    if under_way.finishing:
        raise ConflictError(
            f"run {run.id} is being finished (its best kernels are being measured again); best_kernel gives its "
            "result once finish_run returns, and start_run opens a new search",
            cli=f"run {run.id} is being finished by another command (its best kernels are being measured again)",
        )
    if run.steps >= config.total_steps:
        raise ConflictError(
            f"run {run.id} has taken all {config.total_steps} of its steps; call finish_run to re-measure its best "
            "kernels, or start_run (with a larger total_steps) for a longer search",
            cli=f"run {run.id} has taken all {config.total_steps} of its steps",
        )
    if run.steps + under_way.steps >= config.total_steps:
        raise ConflictError(
            f"run {run.id} has taken {run.steps} of its {config.total_steps} steps and the other "
            f"{config.total_steps - run.steps} are being evaluated now; get_run shows them as they land, and "
            "finish_run then picks the winner",
            cli=f"run {run.id} has taken {run.steps} of its {config.total_steps} steps and another command is "
            f"evaluating the other {config.total_steps - run.steps}",
        )


def _refuse_full_node(node: NodeRecord, config: SearchConfig, under_way: _UnderWay, advice: str) -> None:
    """A small step from a node whose small_step_limit is reached, counting the small steps from it that are
    being evaluated now, is refused before anything is evaluated or written."""
    small = under_way.small[node.id]
    if node.small_children + small >= config.small_step_limit:
        being = f" and {small} more being evaluated" if small else ""
        facts = (
            f"node {node.id} has {node.small_children} small-step children{being} "
            f"(small_step_limit is {config.small_step_limit})"
        )
        raise ConflictError(f"{facts}{advice}", cli=facts)


def _refuse_small_step_from_root(node: NodeRecord, action: Kind) -> None:
    """Before anything is written or evaluated (the store refuses it too, inside the step's transaction)."""
    if action is Kind.small and node.kind is Kind.root:
        raise RequestError("the root has no kernel to edit; take a large step from it")


def get_node(svc: Services, req: GetNodeRequest) -> NodeResult:
    """A node with its statistics, its code and its evaluation.

    Raises:
        NotFoundError: the node id is unknown.
    """
    node = svc.store.node(req.node_id)
    evaluation = (
        Evaluation.model_validate_json(svc.store.evaluation(node.evaluation_id).result)
        if node.evaluation_id is not None
        else None
    )
    return NodeResult(
        node_id=node.id,
        run_id=node.run_id,
        parent_id=node.parent_id,
        kind=node.kind.value,
        depth=node.depth,
        segment=node.segment,
        step=node.seq,
        status=node.status,
        speedup=node.speedup,
        reward=node.reward,
        visits=node.visits,
        mean_reward=node.total_reward / node.visits if node.visits else 0.0,
        max_reward=node.max_reward,
        children=node.children,
        context_node_ids=node.context_ids,
        code=node.code if req.include_code else None,
        evaluation=evaluation,
    )


def get_run(svc: Services, req: GetRunRequest) -> RunResult:
    """A run's state: progress, counts by status, depth, and its best node.

    Raises:
        NotFoundError: the run id is unknown.
    """
    run = svc.store.run(req.run_id)
    task = svc.store.task(run.task_id)
    nodes, depth, counts = svc.store.view(run).shape()
    best = svc.store.node(run.best_node_id) if run.best_node_id is not None else None
    config = _config(run)
    return RunResult(
        run_id=run.id,
        task_id=run.task_id,
        task_name=task.name,
        status=run.status,
        stop_reason=run.stop_reason,
        model=run.model,
        mode=run.mode,
        backend=run.backend,
        seed=run.seed,
        steps_done=run.steps,
        steps_total=config.total_steps,
        nodes=nodes,
        counts=counts,
        max_depth=depth,
        best_node_id=run.best_node_id,
        best_speedup=best.speedup if best else None,
        final_node_id=run.final_node_id,
        config=config,
        created_at=run.created_at,
        updated_at=run.updated_at,
    )


def best_kernel(svc: Services, req: BestKernelRequest) -> BestKernelResult:
    """The best correct kernel of a run, as `runs`, the report and explore's summary name it (`run_best`): the
    winner of the final re-measurement once the run is finished, else the fastest in-search measurement;
    among kernels of the same speed (all correct ones, where nothing was timed) the one with the lowest static
    cost of the sm_90 compile (`tie_break_key`), then the first found.

    Raises:
        NotFoundError: the run id is unknown.
        RequestError: the run has no correct kernel yet.
    """
    run = svc.store.run(req.run_id)
    best = run_best(svc.store, run)
    if best is None:
        raise RequestError(f"run {run.id} has no correct kernel yet ({run.steps} evaluated); keep searching")
    node = svc.store.node(best.node_id)
    return BestKernelResult(
        run_id=run.id,
        node_id=node.id,
        speedup=best.speedup,
        verified=best.verified,
        measured=best.measured,
        tied_node_ids=list(best.tied),
        code=node.code,
        message=best.sentence,
    )


async def finish_run(svc: Services, req: FinishRunRequest, *, progress: Progress | None = None) -> FinishRunResult:
    """End a run: evaluate its best candidates again in fresh processes with fresh seeds and choose the winner
    on those numbers (the best of many noisy measurements is biased up). With `final_reevaluation = 0` (the
    paper preset) the in-search best stands; so does it where nothing was timed (no GPU): untimed kernels are
    not measured again, since a second run gives no number to choose by.

    Raises:
        NotFoundError: the run id is unknown.
        ConflictError: steps of the run are being evaluated.
    """
    run = svc.store.run(req.run_id)
    if run.status == "finished":  # a second call answers what the first decided, and measures nothing
        earlier = [ReevaluatedCandidate.model_validate(c) for c in json.loads(run.final_result or "[]")]
        return FinishRunResult(
            run_id=run.id,
            final_node_id=run.final_node_id,
            candidates=earlier,
            message=f"already finished; node {run.final_node_id} is its result"
            if run.final_node_id is not None
            else "already finished, with no correct kernel",
        )

    def check() -> ClaimSpec:
        if svc.store.run(run.id).status == "finished":
            raise ConflictError(
                f"run {run.id} was finished by another call just now; call finish_run again for its result",
                cli=f"run {run.id} was finished by another command just now",
            )
        under_way = _UnderWay.of(svc.store, run.id)
        if under_way.steps:
            raise ConflictError(
                f"run {run.id} has {under_way.steps} step(s) being evaluated now; call finish_run again once they "
                "have landed (get_run shows them), so that the winner is chosen among them too",
                cli=f"run {run.id} cannot be finished yet: another command is evaluating {under_way.steps} step(s) "
                "of it",
            )
        if under_way.finishing:
            raise ConflictError(
                f"run {run.id} is being finished by another call; best_kernel gives its result after",
                cli=f"run {run.id} is being finished by another command",
            )
        return ClaimSpec(run_id=run.id, parent_id=None, kind="finish")

    claim_id = svc.store.claim(check)
    try:
        return await _finish(svc, svc.store.run(run.id), progress)
    finally:
        svc.store.release_claim(claim_id)


async def _finish(svc: Services, run: RunRecord, progress: Progress | None) -> FinishRunResult:
    config = _config(run)
    task = _task(svc, run.task_id)
    correct_nodes = sorted(
        (n for n in svc.store.nodes(run.id) if n.status == Status.ok),
        key=lambda n: (-(n.speedup if n.speedup is not None else 1.0), n.id),
    )
    seen: set[str] = set()
    top: list[NodeRecord] = []
    for n in correct_nodes:
        # an untimed kernel is not measured again: without a GPU a second run gives no number to choose by
        if n.speedup is not None and n.code_hash not in seen and len(top) < config.final_reevaluation:
            seen.add(n.code_hash)
            top.append(n)
    candidates: list[ReevaluatedCandidate] = []
    for n in top:
        options: dict[str, Any] = {"with_compile": True} if run.with_compile else {}
        fresh = await svc.evaluator.evaluate(
            task, n.code, mode=run.mode, backend=run.backend, fresh_seeds=True, progress=progress, **options
        )
        candidates.append(
            ReevaluatedCandidate(
                node_id=n.id, search_speedup=n.speedup, status=fresh.status.value, speedup=fresh.speedup
            )
        )
    passing = [c for c in candidates if c.status == Status.ok]
    winner = max(passing, key=lambda c: (c.speedup if c.speedup is not None else 1.0, -c.node_id), default=None)
    in_search = run_best(svc.store, run)
    final_id = winner.node_id if winner else (in_search.node_id if in_search else None)
    svc.store.finish_run(run.id, final_id, json.dumps([c.model_dump() for c in candidates]))
    if final_id is None or in_search is None:
        message = "finished, with no correct kernel"
    elif not candidates and in_search.speedup is None:
        message = (
            "finished; nothing was re-measured: no kernel of this run was timed (no GPU, or a correctness-only "
            f"backend), so a second run could only say again that it is correct. Node {final_id} stands: "
            f"{in_search.why}"
        )
    elif not candidates:
        message = (
            f"finished; the in-search best, node {final_id} at {speedup_text(in_search.speedup)}, stands (no final "
            "re-evaluation)"
        )
    elif winner is None:
        message = (
            f"finished; no candidate passed again in a fresh process, so the in-search best (node {final_id}) stands "
            "unconfirmed: check it with best_kernel before trusting it"
        )
    else:
        message = f"finished; node {winner.node_id} won the re-evaluation of {len(candidates)} candidates"
    return FinishRunResult(run_id=run.id, final_node_id=final_id, candidates=candidates, message=message)
