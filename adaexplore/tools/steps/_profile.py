"""compile_and_profile: a kernel judged, and within a run stored as a step with its claim, reward and verdict."""

from __future__ import annotations

import hashlib
from typing import Literal

from adaexplore.domain import Kind
from adaexplore.errors import ConflictError, RequestError
from adaexplore.executor import (
    Evaluation,
    EvaluationOptions,
    Mode,
    Status,
    code_hash,
)
from adaexplore.search import reward, untimed_note
from adaexplore.store import ClaimSpec, NewEvaluation, NodeRecord, RunRecord
from adaexplore.tools._best import TIE_RULE, run_best
from adaexplore.tools._models import (
    CompileAndProfileRequest,
    CompileAndProfileResult,
)
from adaexplore.tools._service import (
    Progress,
    Services,
    UnderWay,
    parsed_task,
    refuse_closed_run,
    refuse_full_node,
    refuse_other_task,
    refuse_small_step_from_root,
    run_config,
)
from adaexplore.tools.steps._budget import protocol_budget

__all__ = ["compile_and_profile"]


# after an untimed kernel's reward note: which kernel of a tie the search and best_kernel prefer
_TIE_NOTE = f", and among them the lowest {TIE_RULE} goes first"


async def compile_and_profile(
    svc: Services,
    req: CompileAndProfileRequest,
    *,
    progress: Progress | None = None,
    budget: Literal["call", "protocol"] = "call",
) -> CompileAndProfileResult:
    """Evaluate a kernel. With an expansion (or a run, parent and action) the result becomes a new node of
    the tree and its reward is back-propagated; with only a task id nothing is stored. `budget`: what the
    candidate may take, an MCP call's (`executor.call_budget_s`, so that the call answers before a client's
    timeout) or, where no client waits (a headless explore, a bench), the protocol's (`protocol_budget_s`).

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
        return await _evaluate_step(svc, req, progress, None, None, None, [], None, budget)
    sent = hashlib.sha256(req.code.encode()).hexdigest()
    target: tuple[RunRecord | None, int | None, Kind | None, list[int]] | None = None

    def check() -> ClaimSpec:
        # inside the claim's transaction: what the checks read cannot change before the claim is written
        nonlocal target
        target = run, parent_id, action, _ = _target(svc, req)
        assert run is not None and parent_id is not None and action is not None
        if req.expansion_id is not None and (req.expansion_id, sent) in UnderWay.of(svc.store, run.id).sent:
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
        return await _evaluate_step(svc, req, progress, *target, claim_id, budget)
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
        best_id = _best_id(svc, expansion.run_id)
        gpu = evaluation.estimate.gpu if evaluation.estimate is not None else ""
        note = untimed_note(
            evaluation.status.value,
            node.speedup,
            run_config(svc.store.run(expansion.run_id)).reward_cap,
            node.estimated_speedup,
            gpu,
        )
        ties = _TIE_NOTE if node.estimated_speedup is None else ""
        return CompileAndProfileResult(
            status=evaluation.status.value,
            message=f"{evaluation.message} (this code was sent for expansion {expansion_id} before: the result "
            f"of node {node.id}, no new step)" + (f" (reward {note}{ties})" if note else ""),
            speedup=node.speedup,  # as the run credits it (never above what the speed of light allows)
            timed=evaluation.timed,
            estimated_speedup=node.estimated_speedup,
            sol_fraction=evaluation.sol_fraction,
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
    budget: Literal["call", "protocol"],
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
    task = parsed_task(svc, task_id)
    mode = req.mode or (run.mode if run else None) or svc.settings.executor.mode
    backend = req.backend or (run.backend if run else None) or svc.settings.executor.backend
    config = run_config(run) if run is not None else svc.settings.search
    digest = code_hash(req.code)
    with_compile = run is not None and run.with_compile
    reused, earlier = None, None
    if config.reuse_identical:
        await svc.evaluator.ready(progress)  # the fingerprint of its machine is known once it has started
        for record in svc.store.find_evaluations(task_id, digest, svc.evaluator.fingerprint(), mode):
            candidate = Evaluation.model_validate_json(record.result)
            if (
                _same_backends(candidate, backend)
                and (not with_compile or _timed_compile(candidate))
                and (candidate.status is not Status.timeout or _in_run(svc, run, record.id))
            ):
                reused, earlier = record, candidate
                break
    if earlier is not None:
        evaluation = earlier
    else:
        options = EvaluationOptions(
            mode=Mode(mode),
            backend=backend,
            with_compile=with_compile,
            candidate_budget_s=(
                svc.settings.executor.call_budget_s
                if budget == "call"
                else protocol_budget(svc.settings, svc.evaluator, backend, task)
            ),
            candidate_budget_wall=budget == "call",  # a client waits for the answer (see tools/steps/_budget.py)
            calibrations=svc.store.calibrations(),  # `adaexplore calibrate`'s, for an estimate of their GPU
        )
        evaluation = await svc.evaluator.evaluate(task, req.code, options, progress=progress)
    # what a timed kernel launches is kept in the store beside its verdict (for `adaexplore calibrate`), not in it
    work, evaluation = evaluation.forward_work, evaluation.model_copy(update={"forward_work": None})
    # the speedups a run ranks and rewards by, never above what the task's speed of light allows (a kernel
    # measured or estimated under it carries a faster_than_light warning); where nothing timed a correct kernel,
    # the search ranks and rewards it by its estimate (labelled as one)
    speedup = evaluation.credited_speedup
    estimated = evaluation.credited_estimated_speedup if speedup is None else None
    node: NodeRecord | None = None
    score = None
    best_id = None
    if run is not None and evaluation.status is not Status.infra_error:
        assert parent_id is not None and action is not None
        score = reward(evaluation.status.value, speedup if speedup is not None else estimated, config.reward_cap)
        stored: NewEvaluation | int = (
            reused.id
            if reused is not None
            else NewEvaluation(
                code_hash=digest,
                environment=evaluation.provenance.environment,
                mode=mode,
                status=evaluation.status.value,
                speedup=speedup,
                estimated_speedup=estimated,
                result=evaluation.model_dump_json(),
                work=work,
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
        best_id = _best_id(svc, run.id)
    message = evaluation.message
    if run is not None and node is None:
        best_id = _best_id(svc, run.id)
        message += " (not added to the tree: the evaluator failed, not the kernel; try again)"
    gpu = evaluation.estimate.gpu if evaluation.estimate is not None else ""
    note = (
        untimed_note(evaluation.status.value, speedup, config.reward_cap, estimated, gpu) if score is not None else None
    )
    if note:
        message += f" (reward {note}{_TIE_NOTE if estimated is None else ''})"
    return CompileAndProfileResult(
        status=evaluation.status.value,
        message=message,
        speedup=speedup,
        timed=evaluation.timed,
        estimated_speedup=estimated,
        sol_fraction=evaluation.sol_fraction,
        node_id=node.id if node else None,
        reward=score,
        is_new_best=node is not None and best_id == node.id,
        best_node_id=best_id,
        reused_evaluation=reused is not None,
        evaluation=evaluation,
    )


def _best_id(svc: Services, run_id: str) -> int | None:
    """The run's one best node, as best_kernel, get_run and every view name it (`run_best`)."""
    best = run_best(svc.store, svc.store.run(run_id))
    return best.node_id if best is not None else None


def _in_run(svc: Services, run: RunRecord | None, evaluation_id: int) -> bool:
    """Whether a node of `run` holds the evaluation: a `timeout` is reused within the run that saw it alone, since
    on another day (another load of the machine, another budget) the same code may finish."""
    return run is not None and svc.store.run_holds_evaluation(run.id, evaluation_id)


def _timed_compile(evaluation: Evaluation) -> bool:
    """Whether an evaluation holds torch.compile's timing, or could not have (it was not timed at all)."""
    return evaluation.timing is None or evaluation.timing.speedup_vs_compile is not None


def _same_backends(evaluation: Evaluation, backend: str | None) -> bool:
    """Whether a stored verdict came from the backends a new evaluation asked for `backend` would use: the
    machine's automatic path (the GPU, or compile then interpret), or exactly the one named."""
    used = [b.value for b in evaluation.backends]
    paths = (["cuda"], ["compile", "interpret"]) if backend in (None, "auto") else ([backend],)
    if evaluation.status is Status.ok:
        return used in paths
    # a failure ends the path where it is found: one in the static checks or the sm_90 compile check used a
    # first part of it, which the same code on the same path meets again
    return any(used == path[: len(used)] for path in paths)


def _target(
    svc: Services, req: CompileAndProfileRequest
) -> tuple[RunRecord | None, int | None, Kind | None, list[int]]:
    if req.expansion_id is not None:
        if req.run_id is not None or req.parent_id is not None or req.action is not None:
            raise RequestError("give expansion_id alone, or run_id with parent_id and action, not both")
        expansion = svc.store.expansion(req.expansion_id)
        run = svc.store.run(expansion.run_id)
        under_way = UnderWay.of(svc.store, run.id)
        refuse_closed_run(run, run_config(run), under_way)
        parent = svc.store.node(expansion.node_id, run_id=run.id)
        if expansion.action is Kind.small:
            # another client's small step from this node may have landed, or be under way, since this
            # expansion was handed out
            refuse_full_node(
                parent, run_config(run), under_way, f" since expansion {expansion.id} was made; call select_uct again"
            )
        refuse_other_task(req, run)
        return run, expansion.node_id, expansion.action, expansion.context_ids
    if req.run_id is not None:
        if req.parent_id is None or req.action is None:
            raise RequestError("with run_id, give parent_id and action (or use the expansion_id from expand_node)")
        run = svc.store.run(req.run_id)
        under_way = UnderWay.of(svc.store, run.id)
        refuse_closed_run(run, run_config(run), under_way)
        refuse_other_task(req, run)
        parent = svc.store.node(req.parent_id, run_id=run.id)
        action = Kind(req.action)
        refuse_small_step_from_root(parent, action)
        if action is Kind.small:
            refuse_full_node(parent, run_config(run), under_way, "; take a large step from it")
        return run, parent.id, action, []
    if req.task_id is None:
        raise RequestError(
            "say what to evaluate against: expansion_id (from expand_node), run_id with parent_id and "
            "action, or task_id alone"
        )
    svc.store.task(req.task_id)
    return None, None, None, []
