"""A run's life outside its steps: start_run, reading a node or the run, its best kernel, and finish_run."""

from __future__ import annotations

import json
import secrets

from pydantic import ValidationError

from adaexplore.config import SearchConfig
from adaexplore.errors import ConflictError, RequestError
from adaexplore.executor import (
    Evaluation,
    EvaluationOptions,
    Mode,
    Status,
    task_from_source,
)
from adaexplore.store import ClaimSpec, NodeRecord, RunRecord
from adaexplore.tools._best import run_best, speedup_text
from adaexplore.tools._models import (
    BestKernelRequest,
    BestKernelResult,
    FinishRunRequest,
    FinishRunResult,
    GetNodeRequest,
    GetRunRequest,
    NodeResult,
    ReevaluatedCandidate,
    RunResult,
    StartRunRequest,
    StartRunResult,
)
from adaexplore.tools._service import Progress, Services, UnderWay, parsed_task, run_config
from adaexplore.tools.tasks._brief import run_brief
from adaexplore.tools.tasks._flashinfer import run_mode

__all__ = ["best_kernel", "finish_run", "get_node", "get_run", "start_run"]


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
    brief = run_brief(svc, run)
    svc.store.give_brief(run.id, brief.version)
    return StartRunResult(
        run_id=run.id,
        task_id=run.task_id,
        root_node_id=run.root_id,
        seed=seed,
        config=config,
        brief=brief.text,
        brief_version=brief.version,
    )


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
        estimated_speedup=node.estimated_speedup,
        sol_fraction=evaluation.sol_fraction if evaluation is not None else None,
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
    best = run_best(svc.store, run)  # the one best, as best_kernel, `runs` and the report name it
    config = run_config(run)
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
        best_node_id=best.node_id if best else None,
        best_speedup=best.speedup if best else None,
        best_estimated_speedup=best.estimated_speedup if best else None,
        best_why=best.sentence if best else "no correct kernel yet",
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
        estimated_speedup=best.estimated_speedup,
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
        under_way = UnderWay.of(svc.store, run.id)
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
    config = run_config(run)
    task = parsed_task(svc, run.task_id)
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
        options = EvaluationOptions(
            mode=Mode(run.mode), backend=run.backend, fresh_seeds=True, with_compile=run.with_compile
        )
        fresh = await svc.evaluator.evaluate(task, n.code, options, progress=progress)
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
