"""What a bench's report page shows, as plain JSON-able dicts: its facts, its summary metrics, one row per problem
and the data of each problem's run (`tools.run_page_data`, which a run's page shows alone)."""

from __future__ import annotations

from typing import Any

from adaexplore import tools
from adaexplore.bench._table import bench_summary
from adaexplore.errors import NotFoundError

__all__ = ["bench_page_data", "run_page_data"]


def run_page_data(svc: tools.Services, run_id: str) -> dict[str, Any]:
    """A run's report page.

    Raises:
        NotFoundError: no run has this id.
    """
    return {"kind": "run", "run": tools.run_page_data(svc, run_id)}


def bench_page_data(svc: tools.Services, bench_id: str) -> dict[str, Any]:
    """A bench's report page, with the data of each problem's run so that one file shows them all.

    Raises:
        NotFoundError: no bench has this id.
    """
    bench = tools.bench_record(svc, bench_id)
    rows = tools.bench_rows(svc, bench.id)
    summary = bench_summary(rows)
    problems: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    notes = list(summary.notes)
    for row in rows:
        problem = {
            "problem_id": row.problem_id,
            "name": row.name,
            "task_id": row.task_id,
            "run_id": row.run_id,
            "node_id": row.node_id,
            "status": row.status,
            "message": row.message,
            "speedup": row.speedup,
            "compile_speedup": row.compile_speedup,
            "estimated_speedup": row.estimated_speedup,
            "sol_fraction": row.sol_fraction,
            "triton_share": row.triton_share,
            "flags": list(row.flags),
            "degenerate": row.degenerate,
            "seconds": row.seconds,
            "has_run": False,
        }
        if row.run_id is not None:
            try:
                runs.append(tools.run_page_data(svc, row.run_id))
                problem["has_run"] = True
            except NotFoundError:
                notes.append(f"problem {row.name}: its run {row.run_id} is not in this store, so its tree is missing")
        problems.append(problem)
    return {
        "kind": "bench",
        "bench": {k: v for k, v in bench.as_dict().items() if k != "provenance"},
        "provenance": {k: v for k, v in bench.provenance_dict.items() if v not in (None, "")},
        "summary": summary.as_dict(),
        "notes": notes,
        "problems": problems,
        "runs": runs,
    }
