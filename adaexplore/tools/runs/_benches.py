"""Benches in the store: a bench is a stored object with one row per problem, each row pointing at the run that
searched the problem and carrying its verdict (`adaexplore bench`, `bench show|list`, the bench report)."""

from __future__ import annotations

from typing import Literal

from adaexplore.domain import Evaluation, Kind
from adaexplore.store import BenchProblemRecord, BenchRecord, ProblemVerdict
from adaexplore.tools._best import run_best
from adaexplore.tools._service import Services

__all__ = [
    "BenchProblemRecord",
    "BenchRecord",
    "ProblemVerdict",
    "bench_list",
    "bench_record",
    "bench_rows",
    "create_bench",
    "finish_bench_problem",
    "run_outcome",
    "set_bench_status",
    "start_bench_problem",
]


def create_bench(
    svc: Services,
    *,
    suite: str,
    suite_hash: str,
    mode: str,
    backend: str,
    source: str,
    options: dict[str, object],
    provenance: dict[str, object],
    problems: list[tuple[int, str, str]],
) -> BenchRecord:
    """A new bench with its problems (id, name, file hash), all pending."""
    return svc.store.create_bench(
        suite=suite,
        suite_hash=suite_hash,
        mode=mode,
        backend=backend,
        source=source,
        options=options,
        provenance=provenance,
        problems=problems,
    )


def bench_record(svc: Services, bench_id: str) -> BenchRecord:
    """Raises: NotFoundError: no bench has this id (the message names `bench list`)."""
    return svc.store.bench(bench_id)


def bench_list(svc: Services) -> list[BenchRecord]:
    """Every bench, oldest first."""
    return svc.store.benches()


def bench_rows(svc: Services, bench_id: str) -> list[BenchProblemRecord]:
    """A bench's problems in id order, done or pending.

    Raises:
        NotFoundError: no bench has this id.
    """
    return svc.store.bench_problems(bench_id)


def start_bench_problem(
    svc: Services, bench_id: str, problem_id: int, *, task_id: str | None, run_id: str | None
) -> None:
    """Record the task and run a pending problem's work uses (a resumed bench goes on with the same run)."""
    svc.store.start_bench_problem(bench_id, problem_id, task_id=task_id, run_id=run_id)


def finish_bench_problem(svc: Services, bench_id: str, problem_id: int, verdict: ProblemVerdict) -> None:
    svc.store.finish_bench_problem(bench_id, problem_id, verdict)


def set_bench_status(
    svc: Services, bench_id: str, status: Literal["finished", "stopped"], reason: str | None = None
) -> BenchRecord:
    """`finished`, or `stopped` with the reason (a stopped bench resumes with `bench --resume`)."""
    return svc.store.set_bench_status(bench_id, status, reason)


def run_outcome(svc: Services, run_id: str) -> tuple[int | None, Evaluation | None]:
    """A run's result as a bench row shows it: its final (or best correct) node, else its best attempt by reward,
    with that node's evaluation; (None, None) where no kernel was evaluated.

    Raises:
        NotFoundError: the run id is unknown.
    """
    store = svc.store
    run = store.run(run_id)
    best = run_best(store, run)  # the one best, as best_kernel and `runs` name it
    chosen = run.final_node_id if run.final_node_id is not None else (best.node_id if best else None)
    if chosen is None:
        nodes = [n for n in store.nodes(run_id) if n.kind is not Kind.root and n.evaluation_id is not None]
        if not nodes:
            return None, None
        chosen = max(nodes, key=lambda n: (n.reward or 0.0, -n.id)).id
    node = store.node(chosen)
    if node.evaluation_id is None:
        return node.id, None
    return node.id, Evaluation.model_validate_json(store.evaluation(node.evaluation_id).result)
