"""The search's two decisions as tools: select_uct (where to grow, and how) and expand_node (what the step's writer
reads: the instructions, with the kernels of its context)."""

from __future__ import annotations

from dataclasses import dataclass

from adaexplore.domain import Kind
from adaexplore.executor import (
    Evaluation,
    Status,
    task_from_source,
)
from adaexplore.prompts import (
    KernelContext,
    LargeStepContext,
    SmallStepContext,
    render_large_step,
    render_small_step,
    render_with_memory,
)
from adaexplore.search import NodeStats, pool, select, tie_phrase, working_memory
from adaexplore.store import NodeRecord, RunRecord
from adaexplore.tools._best import tie_break_key
from adaexplore.tools._models import (
    ContextKernel,
    ExpandNodeRequest,
    ExpandNodeResult,
    SelectUctRequest,
    SelectUctResult,
    StepAnswer,
    TrailStep,
)
from adaexplore.tools._precision import precision_context
from adaexplore.tools._service import (
    Services,
    UnderWay,
    refuse_closed_run,
    refuse_full_node,
    refuse_small_step_from_root,
    run_config,
    run_rng,
)
from adaexplore.tools._speed import ranking_sentence
from adaexplore.tools.steps._step_facts import child_lines, failure_line, task_facts
from adaexplore.tools.steps._step_text import step_verdict
from adaexplore.tools.tasks._brief import RunBrief, compose_brief, degenerate_line

__all__ = ["POOL_CODE", "expand_node", "select_uct", "step_answer", "step_instructions"]

# The most characters of pool kernels' code that a large step's answer to an MCP client holds (the first kernel's
# whole, however long): the rest are named, with their verdicts, and read as resources.
POOL_CODE = 6_000


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


def select_uct(svc: Services, req: SelectUctRequest) -> SelectUctResult:
    """The node to grow next and the step to take there, with the scores that decided it.

    Raises:
        NotFoundError: the run id is unknown.
    """
    run = svc.store.run(req.run_id)
    config = run_config(run)
    under_way = UnderWay.of(svc.store, run.id)
    refuse_closed_run(run, config, under_way)
    tie_break, tie_name = tie_break_key(svc.store, run)
    view = svc.store.view(run)
    chosen = select(view, run.root_id, config, run_rng(run, "select", run.root_id), tie_break)
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
        action=chosen.action.value,  # type: ignore[arg-type]  # a str to mypy; select() picks large or small
        reason=reason,
        trail=trail,
        steps_done=run.steps,
        steps_total=config.total_steps,
    )


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
    instructions: str  # the step's whole instructions, without the skill memory
    lean: str  # the step's instructions for a client that holds the run's brief, which they cite
    context_ids: list[int]
    brief: RunBrief


def _step_context(svc: Services, req: ExpandNodeRequest) -> _StepContext:
    run = svc.store.run(req.run_id)
    node = svc.store.node(req.node_id, run_id=run.id)
    config = run_config(run)
    under_way = UnderWay.of(svc.store, run.id)
    refuse_closed_run(run, config, under_way)
    action = Kind(req.action)
    view = svc.store.view(run)
    task = svc.store.task(run.task_id)
    refuse_small_step_from_root(node, action)
    parsed = task_from_source(task.source, name=task.name)
    precision = precision_context(run.mode, parsed.allowed_precision, parsed.tolerance)
    speed = ranking_sentence(svc, run, parsed, task)
    facts = task_facts(svc, run)
    brief = compose_brief(svc, parsed, precision, speed, degenerate_line(task))
    citation = brief.citation(run.id)
    if action is Kind.small:
        refuse_full_node(node, config, under_way, "; take a large step from it, or call select_uct again")
        memory = [_context(svc, n) for n in working_memory(view, node.id, config.memory_rounds)]
        # the kernel to edit says how every kernel of the line was checked; the earlier ones leave that out
        current, history, representatives = _brief(memory[-1]), [_brief(k, method=False) for k in memory[:-1]], []
        small = SmallStepContext(
            task_source=parsed.model_view,
            current=_prompt_kernel(current),
            history=[_prompt_kernel(k) for k in history],
            precision=precision,
            speed=speed,
            children=child_lines(svc, node),
            task_facts=facts,
        )
        instructions = render_small_step(small)
        lean = render_small_step(small.model_copy(update={"brief": citation}))
        context_ids = [k.node_id for k in memory]
    else:
        chosen = pool(view, node.id, config, run_rng(run, "pool", node.id))
        representatives = [_brief(_context(svc, n)) for n in chosen]
        current, history = None, []
        large = LargeStepContext(
            task_source=parsed.model_view,
            pool=[_prompt_kernel(k) for k in representatives],
            precision=precision,
            speed=speed,
            origin=failure_line(svc, node),
            task_facts=facts,
        )
        instructions = render_large_step(large)
        lean = render_large_step(large.model_copy(update={"brief": citation, "pool": _within(large.pool)}))
        context_ids = [k.node_id for k in representatives]
    return _StepContext(
        run,
        node,
        action,
        task.source,
        current,
        history,  # the nodes before the current one: the current kernel is given once, as `current`
        representatives,
        instructions,
        lean,
        context_ids,
        brief,
    )


def _within(kernels: list[KernelContext]) -> list[KernelContext]:
    """A large step's pool for a client that can read a node's code as a resource: the code of the first kernels
    whole, as long as they fit `POOL_CODE` characters together (the first always), and of the rest left out (the
    step names where it is)."""
    kept: list[KernelContext] = []
    used = 0
    for kernel in kernels:
        if kept and used + len(kernel.code) > POOL_CODE:
            kept.append(kernel.model_copy(update={"code": ""}))
            continue
        used += len(kernel.code)
        kept.append(kernel)
    return kept


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
        skill_memory=step.brief.memory,
        brief=step.brief.text,
        brief_version=step.brief.version,
        instructions=render_with_memory(step.brief.memory, step.instructions),
        step_instructions=step.lean,
    )


def step_answer(svc: Services, result: ExpandNodeResult) -> StepAnswer:
    """expand_node's answer to an MCP client, which keeps its conversation: the step's instructions cite the run's
    brief (start_run gave it), which heads them only where the run's client has not been given its version yet
    (the skill memory changed since)."""
    if svc.store.give_brief(result.run_id, result.brief_version):
        return StepAnswer.of(result, f"{result.brief}\n\n{result.step_instructions}")
    return StepAnswer.of(result, result.step_instructions)


def step_instructions(svc: Services, req: ExpandNodeRequest) -> str:
    """The instruction text expand_node would give, read without storing anything.

    Raises:
        NotFoundError: the run or node id is unknown.
        RequestError: the node is in another run, or cannot take this step.
    """
    step = _step_context(svc, req)
    return render_with_memory(step.brief.memory, step.instructions)
