"""Benches: one row per bench (a suite, how its kernels were found, the machine it ran on) and one per problem.

A problem's row is written when its work starts (its task and run) and completed when its verdict is in;
a row without a status is pending, so a bench that was stopped resumes with exactly the problems left.
"""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from adaexplore.domain import Degeneracy
from adaexplore.errors import NotFoundError
from adaexplore.store._db import Database, Row

__all__ = ["BenchProblemRecord", "BenchRecord", "BenchTables", "ProblemVerdict"]


class BenchRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    suite: str  # what the user named: a directory, or "examples"
    suite_hash: str  # over the problems' ids and file hashes
    mode: str
    backend: str
    source: str  # "replay" (kernels from a directory) or "search" (a search per problem)
    options: str  # JSON: ids, replay directory, steps, parallel, model, with_compile
    status: str  # running, stopped (resumable, for stop_reason) or finished
    stop_reason: str | None
    provenance: str  # JSON: adaexplore, python, torch, triton, gpu, driver, sandbox, host
    created_at: str
    updated_at: str

    @property
    def options_dict(self) -> dict[str, Any]:
        """The options as the bench wrote them (JSON: each option's reader knows its type)."""
        return dict(json.loads(self.options))

    @property
    def provenance_dict(self) -> dict[str, object]:
        return dict(json.loads(self.provenance))

    def as_dict(self) -> dict[str, object]:
        """The bench as plain data, its options and provenance decoded (for JSON and the report page)."""
        return self.model_dump(exclude={"options", "provenance"}) | {
            "options": self.options_dict,
            "provenance": self.provenance_dict,
        }


class ProblemVerdict(BaseModel):
    """What a finished problem's row holds besides its identity."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    status: str  # an evaluation status, or "task_error" (the problem's own code failed)
    message: str
    node_id: int | None = None
    speedup: float | None = None  # against eager PyTorch
    compile_speedup: float | None = None  # against torch.compile of the reference
    triton_share: float | None = None  # the candidate's Triton kernels' share of a forward's GPU time
    flags: list[str] = Field(default_factory=list)  # audit flag codes
    seconds: float | None = None  # wall time of the problem's work
    # where nothing timed it: the kernel's estimated speedup (never a measurement)
    estimated_speedup: float | None = None
    # the measured kernel's share of its task's speed of light
    sol_fraction: float | None = None


class BenchProblemRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    bench_id: str
    problem_id: int
    name: str
    file_hash: str
    task_id: str | None
    run_id: str | None
    node_id: int | None
    status: str | None  # None while the problem is pending
    message: str
    speedup: float | None
    compile_speedup: float | None
    triton_share: float | None
    flags: list[str]
    seconds: float | None
    estimated_speedup: float | None = None
    sol_fraction: float | None = None
    # the problem's task is degenerate: the one line that says so (read from its task, not stored with the row)
    degenerate: str | None = None

    @property
    def done(self) -> bool:
        return self.status is not None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class BenchTables:
    """Mixed into the store: it shares the store's connection and its one-writer transactions."""

    _db: Database
    _write: Callable[[], contextlib.AbstractContextManager[Database]]

    def create_bench(
        self,
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
        bench_id = f"bench-{secrets.token_hex(4)}"
        now = _now()
        with self._write() as db:
            db.execute(
                "INSERT INTO benches (id, suite, suite_hash, mode, backend, source, options, status, provenance, "
                "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?)",
                (
                    bench_id,
                    suite,
                    suite_hash,
                    mode,
                    backend,
                    source,
                    json.dumps(options),
                    json.dumps(provenance),
                    now,
                    now,
                ),
            )
            db.executemany(
                "INSERT INTO bench_problems (bench_id, problem_id, name, file_hash) VALUES (?, ?, ?, ?)",
                [(bench_id, pid, name, digest) for pid, name, digest in problems],
            )
        return self.bench(bench_id)

    def bench(self, bench_id: str) -> BenchRecord:
        row = self._db.execute("SELECT * FROM benches WHERE id=?", (bench_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no bench has id {bench_id!r}; `adaexplore bench list` lists the benches")
        return BenchRecord(**dict(row))

    def benches(self) -> list[BenchRecord]:
        return [BenchRecord(**dict(r)) for r in self._db.execute("SELECT * FROM benches ORDER BY created_at")]

    def bench_problems(self, bench_id: str) -> list[BenchProblemRecord]:
        self.bench(bench_id)
        rows = self._db.execute(
            "SELECT bench_problems.*, tasks.degenerate AS task_degenerate FROM bench_problems LEFT JOIN tasks "
            "ON tasks.id = bench_problems.task_id WHERE bench_id=? ORDER BY problem_id",
            (bench_id,),
        )
        return [_problem(r) for r in rows]

    def start_bench_problem(self, bench_id: str, problem_id: int, *, task_id: str | None, run_id: str | None) -> None:
        """Record the task and run a pending problem's work uses (a resumed bench goes on with the same run)."""
        with self._write() as db:
            db.execute(
                "UPDATE bench_problems SET task_id=?, run_id=? WHERE bench_id=? AND problem_id=?",
                (task_id, run_id, bench_id, problem_id),
            )
            db.execute(
                "UPDATE benches SET status='running', stop_reason=NULL, updated_at=? WHERE id=?", (_now(), bench_id)
            )

    def finish_bench_problem(self, bench_id: str, problem_id: int, verdict: ProblemVerdict) -> None:
        with self._write() as db:
            db.execute(
                "UPDATE bench_problems SET node_id=?, status=?, message=?, speedup=?, compile_speedup=?, "
                "triton_share=?, flags=?, seconds=?, estimated_speedup=?, sol_fraction=? "
                "WHERE bench_id=? AND problem_id=?",
                (
                    verdict.node_id,
                    verdict.status,
                    verdict.message,
                    verdict.speedup,
                    verdict.compile_speedup,
                    verdict.triton_share,
                    json.dumps(verdict.flags),
                    verdict.seconds,
                    verdict.estimated_speedup,
                    verdict.sol_fraction,
                    bench_id,
                    problem_id,
                ),
            )
            db.execute("UPDATE benches SET updated_at=? WHERE id=?", (_now(), bench_id))

    def set_bench_status(self, bench_id: str, status: str, reason: str | None = None) -> BenchRecord:
        """`finished`, or `stopped` with the reason (a stopped bench resumes with `bench --resume`)."""
        self.bench(bench_id)
        with self._write() as db:
            db.execute(
                "UPDATE benches SET status=?, stop_reason=?, updated_at=? WHERE id=?",
                (status, reason, _now(), bench_id),
            )
        return self.bench(bench_id)


def _problem(row: Row) -> BenchProblemRecord:
    values = dict(row)
    values["flags"] = json.loads(values["flags"])
    degenerate = values.pop("task_degenerate", None)
    values["degenerate"] = Degeneracy.model_validate_json(degenerate).line() if degenerate else None
    return BenchProblemRecord(**values)
