"""What a run's report page shows, read from the store into plain JSON-able dicts: the run's facts, every node
(kind, status, speedup, its code, a diff to its parent's code and its verdict with the audit flags), the path
from the root to the best node, the counts by status and the best speedup (or, where nothing was timed, the
number of correct kernels) after each step. `adaexplore report`, the bench's pages and the server's pages read it.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from pydantic import ValidationError

from adaexplore.domain import Evaluation
from adaexplore.errors import NotFoundError
from adaexplore.search import correct
from adaexplore.store import NodeRecord, Store
from adaexplore.tools._best import run_best
from adaexplore.tools._service import Services

__all__ = ["run_page_data"]

_PROVENANCE = ("gpu", "driver", "cuda", "torch", "triton", "python", "adaexplore", "sandbox", "compile_target")


def run_page_data(svc: Services, run_id: str) -> dict[str, Any]:
    """A run's report page: its facts, every node with its code, diff and verdict, the best path, the counts by
    status and the progress after each step.

    Raises:
        NotFoundError: no run has this id.
    """
    store = svc.store
    run = store.run(run_id)
    degenerate = None
    try:
        task = store.task(run.task_id)
        task_name = task.name
        degenerate = degeneracy.line() if (degeneracy := task.degeneracy) is not None else None
    except NotFoundError:
        task_name = run.task_id
    nodes = store.nodes(run.id)
    by_id = {n.id: n for n in nodes}
    chosen = run_best(store, run)  # the best node and its number, as `runs` and best_kernel name them
    best = chosen.node_id if chosen else None
    on_path: list[int] = []
    current = best
    while current is not None and current in by_id:
        on_path.append(current)
        current = by_id[current].parent_id
    path = set(on_path)
    verdicts: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
    node_rows = []
    for node in nodes:
        verdict = None
        if node.evaluation_id is not None:
            if node.evaluation_id not in verdicts:
                verdicts[node.evaluation_id] = _verdict(store, node.evaluation_id)
            verdict = verdicts[node.evaluation_id][0]
        parent = by_id.get(node.parent_id) if node.parent_id is not None else None
        node_rows.append(
            {
                "id": node.id,
                "parent": node.parent_id,
                "kind": node.kind.value,
                "depth": node.depth,
                "step": node.seq,
                "status": node.status,
                "speedup": node.speedup,
                "estimated_speedup": node.estimated_speedup,
                "compile_speedup": verdict["speedup_vs_compile"] if verdict else None,
                "sol_fraction": verdict["sol_fraction"] if verdict else None,
                "reward": node.reward,
                "visits": node.visits,
                "value": node.total_reward / node.visits if node.visits else None,
                "code": node.code,
                "diff": _diff(parent, node),
                "verdict": verdict,
                "best_path": node.id in path,
            }
        )
    config = json.loads(run.config)
    timed = any(correct(n.status) and n.speedup is not None for n in nodes)
    # the machine of the first correct kernel's evaluation, else of any evaluation
    machines = [p for v, p in verdicts.values() if v["status"] == "ok"] + [p for _, p in verdicts.values() if p]
    return {
        "id": run.id,
        "task_id": run.task_id,
        "task_name": task_name,
        "task_degenerate": degenerate,  # the one line that says the task is degenerate, where it is
        "status": run.status,
        "stop_reason": run.stop_reason,
        "steps": run.steps,
        "total_steps": config.get("total_steps"),
        "mode": run.mode,
        "backend": run.backend,
        "model": run.model,
        "seed": run.seed,
        "with_compile": run.with_compile,
        "created_at": run.created_at,
        "updated_at": run.updated_at,
        "root_id": run.root_id,
        "best_node_id": best,
        "best_speedup": chosen.speedup if chosen else None,
        # where nothing timed it: its estimated speedup (never shown as a measurement)
        "best_estimated_speedup": chosen.estimated_speedup if chosen else None,
        "best_measured": chosen.measured if chosen else None,  # re-measured, search-time, estimated or untimed
        "best_why": chosen.why if chosen else None,
        "best_tied": list(chosen.tied) if chosen else [],
        "confirmed": chosen is not None and chosen.verified,
        "best_path": list(reversed(on_path)),
        "timed": timed,
        "counts": _counts(nodes),
        "progress": _progress(nodes),
        "provenance": machines[0] if machines else {},
        "nodes": node_rows,
    }


def _verdict(store: Store, evaluation_id: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """A node's verdict as the page shows it, and the machine it was measured on."""
    try:
        evaluation = Evaluation.model_validate_json(store.evaluation(evaluation_id).result)
    except (NotFoundError, ValidationError) as exc:
        message = f"the stored evaluation {evaluation_id} cannot be read by this adaexplore: {str(exc)[:200]}"
        return {
            "status": "unreadable",
            "message": message,
            "timed": False,
            "speedup": None,
            "speedup_vs_compile": None,
            "sol_fraction": None,
            "speed_of_light": None,
            "estimate": None,
            "triton_share": None,
            "backends": [],
            "flags": [],
            "error": None,
        }, {}
    timing, error = evaluation.timing, evaluation.error
    provenance = evaluation.provenance.model_dump()
    return {
        "status": evaluation.status.value,
        "message": evaluation.message,
        "timed": evaluation.timed,
        "speedup": timing.speedup if timing else None,
        "speedup_vs_compile": timing.speedup_vs_compile if timing else None,
        "sol_fraction": evaluation.sol_fraction,
        "speed_of_light": evaluation.speed_of_light.model_dump() if evaluation.speed_of_light else None,
        "estimate": evaluation.estimate.summary if evaluation.estimate else None,
        "triton_share": evaluation.audit.triton_time_share,
        "backends": [b.value for b in evaluation.backends],
        "flags": [f.model_dump() for f in evaluation.audit.flags],
        "error": {"type": error.type, "phase": error.phase, "message": error.message} if error else None,
    }, {k: provenance[k] for k in _PROVENANCE if provenance.get(k) not in (None, "")}


def _diff(parent: NodeRecord | None, node: NodeRecord) -> str | None:
    """A unified line diff from the parent's code (None: the root and its children have no parent code)."""
    if parent is None or not parent.code:
        return None
    if parent.code == node.code:
        return ""
    lines = difflib.unified_diff(
        parent.code.splitlines(keepends=True),
        node.code.splitlines(keepends=True),
        fromfile=f"node {parent.id}",
        tofile=f"node {node.id}",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _counts(nodes: list[NodeRecord]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in nodes:
        if node.parent_id is None:
            continue
        key = node.status or "not evaluated"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _progress(nodes: list[NodeRecord]) -> list[dict[str, Any]]:
    """After each step: the best measured speedup of a correct kernel so far, and how many were correct."""
    series = []
    best: float | None = None
    correct_so_far = 0
    for node in sorted((n for n in nodes if n.parent_id is not None), key=lambda n: n.seq):
        if correct(node.status):
            correct_so_far += 1
            if node.speedup is not None and (best is None or node.speedup > best):
                best = node.speedup
        series.append({"step": node.seq, "node": node.id, "best_speedup": best, "correct": correct_so_far})
    return series
