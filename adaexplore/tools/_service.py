"""What every tool shares: `Services` (the settings, the store and the evaluator), and the checks a step makes
against its run before anything is written.

The tools themselves live beside this module, one typed function per tool (`_task_tools`, `_runs`, `_steps`,
`_profile`, ...); the MCP server and the headless agent call only those. A kernel that fails is a result with a
status. An exception (`RequestError`, `NotFoundError`, `TaskError`) means the caller erred, and its message says how
to fix the call; nothing is written then.
"""

from __future__ import annotations

import contextlib
import random
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from adaexplore.cluster import open_evaluator
from adaexplore.config import SearchConfig, Settings
from adaexplore.domain import Kind
from adaexplore.errors import ConflictError, RequestError
from adaexplore.executor import (
    EvaluationOptions,
    EvaluatorProtocol,
    ProgressUpdate,
    Task,
    task_from_source,
)
from adaexplore.memory import RuleJudge
from adaexplore.store import NodeRecord, RunRecord, Store, open_store
from adaexplore.tools._models import (
    CompileAndProfileRequest,
)

__all__ = [
    "EvaluationOptions",
    "Progress",
    "Services",
    "UnderWay",
    "open_services",
    "parsed_task",
    "refuse_closed_run",
    "refuse_full_node",
    "refuse_other_task",
    "refuse_small_step_from_root",
    "run_config",
    "run_rng",
]

Progress = Callable[[ProgressUpdate], Awaitable[None]]


@dataclass(frozen=True)
class UnderWay:
    """The steps of a run being evaluated now, by any process on the store, that have not yet landed. A step
    is checked against its run's total_steps and its parent's small_step_limit before its evaluation starts,
    and lands after it ends: counting the ones in between keeps concurrent calls from overshooting either
    limit together."""

    steps: int
    small: Counter[int]  # small steps, by parent node
    sent: frozenset[tuple[int, str]]  # (expansion, code hash) of the steps under way
    finishing: bool  # finish_run is re-measuring the run's best kernels

    @classmethod
    def of(cls, store: Store, run_id: str) -> UnderWay:
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
    evaluator: EvaluatorProtocol
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
def parsed_task(svc: Services, task_id: str) -> Task:
    record = svc.store.task(task_id)
    return task_from_source(record.source, name=record.name)


def run_config(run: RunRecord) -> SearchConfig:
    return SearchConfig.model_validate_json(run.config)


def run_rng(run: RunRecord, purpose: str, node_id: int) -> random.Random:
    """The random source of one decision, a function of the run's seed and its progress only, so that a
    resumed run draws what an uninterrupted one would have."""
    return random.Random(f"{run.seed}:{run.steps}:{purpose}:{node_id}")


def refuse_other_task(req: CompileAndProfileRequest, run: RunRecord) -> None:
    if req.task_id is not None and req.task_id != run.task_id:
        raise RequestError(
            f"task_id {req.task_id} is not the task of run {run.id} ({run.task_id}); drop task_id to add to the "
            "run, or give task_id alone to evaluate without a tree"
        )


def refuse_closed_run(run: RunRecord, config: SearchConfig, under_way: UnderWay) -> None:
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


def refuse_full_node(node: NodeRecord, config: SearchConfig, under_way: UnderWay, advice: str) -> None:
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


def refuse_small_step_from_root(node: NodeRecord, action: Kind) -> None:
    """Before anything is written or evaluated (the store refuses it too, inside the step's transaction)."""
    if action is Kind.small and node.kind is Kind.root:
        raise RequestError("the root has no kernel to edit; take a large step from it")
