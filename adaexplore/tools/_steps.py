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
from adaexplore.tools._step_text import step_verdict

__all__ = ["expand_node", "select_uct", "step_instructions"]


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
        action=chosen.action.value,  # type: ignore[arg-type]
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
    instructions: str
    context_ids: list[int]
    skill_memory: str


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
    if action is Kind.small:
        refuse_full_node(node, config, under_way, "; take a large step from it, or call select_uct again")
        memory = [_context(svc, n) for n in working_memory(view, node.id, config.memory_rounds)]
        # the kernel to edit says how every kernel of the line was checked; the earlier ones leave that out
        current, history, representatives = _brief(memory[-1]), [_brief(k, method=False) for k in memory[:-1]], []
        instructions = render_small_step(
            SmallStepContext(
                task_source=parsed.model_view,
                current=_prompt_kernel(current),
                history=[_prompt_kernel(k) for k in history],
                precision=precision,
                speed=speed,
            )
        )
        context_ids = [k.node_id for k in memory]
    else:
        chosen = pool(view, node.id, config, run_rng(run, "pool", node.id))
        representatives = [_brief(_context(svc, n)) for n in chosen]
        current, history = None, []
        instructions = render_large_step(
            LargeStepContext(
                task_source=parsed.model_view,
                pool=[_prompt_kernel(k) for k in representatives],
                precision=precision,
                speed=speed,
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
