"""The headless agent's tables: every model call with its tokens and cost, and notes carried to the next prompt."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict

from adaexplore.store._db import Database

__all__ = ["AgentTables", "ModelCall", "UsageTotals"]


class ModelCall(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str | None
    task_id: str | None
    purpose: str
    model: str
    input_tokens: int
    output_tokens: int
    cost_usd: float
    seconds: float
    attempts: int
    finish_reason: str


class UsageTotals(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    seconds: float
    by_purpose: dict[str, int]

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class AgentTables:
    """Mixed into the store: it shares the store's connection and its one-writer transactions."""

    _db: Database
    _write: Callable[[], contextlib.AbstractContextManager[Database]]

    def record_model_call(self, call: ModelCall) -> None:
        with self._write() as db:
            db.execute(
                "INSERT INTO model_calls (run_id, task_id, purpose, model, input_tokens, output_tokens, cost_usd, "
                "seconds, attempts, finish_reason, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    call.run_id,
                    call.task_id,
                    call.purpose,
                    call.model,
                    call.input_tokens,
                    call.output_tokens,
                    call.cost_usd,
                    call.seconds,
                    call.attempts,
                    call.finish_reason,
                    datetime.now(UTC).isoformat(timespec="milliseconds"),
                ),
            )

    def usage(self, *, run_id: str | None = None, task_id: str | None = None) -> UsageTotals:
        """Totals of the model calls of a run, of a task (over all its runs), or of everything."""
        where, args = [], []
        if run_id is not None:
            where.append("run_id=?")
            args.append(run_id)
        if task_id is not None:
            where.append("task_id=?")
            args.append(task_id)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        rows = self._db.execute(
            "SELECT purpose, COUNT(*), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0), "
            f"COALESCE(SUM(cost_usd), 0), COALESCE(SUM(seconds), 0) FROM model_calls {clause} GROUP BY purpose",
            args,
        ).fetchall()
        return UsageTotals(
            # PostgreSQL sums 64-bit integers as numeric (a Decimal): back to Python's numbers
            calls=sum(int(r[1]) for r in rows),
            input_tokens=sum(int(r[2]) for r in rows),
            output_tokens=sum(int(r[3]) for r in rows),
            cost_usd=sum(float(r[4]) for r in rows),
            seconds=sum(float(r[5]) for r in rows),
            by_purpose={r[0]: r[1] for r in rows},
        )

    def set_note(self, node_id: int, text: str) -> None:
        with self._write() as db:
            db.execute(
                "INSERT INTO node_notes VALUES (?, ?) ON CONFLICT (node_id) DO UPDATE SET text=excluded.text",
                (node_id, text),
            )

    def note(self, node_id: int) -> str | None:
        row = self._db.execute("SELECT text FROM node_notes WHERE node_id=?", (node_id,)).fetchone()
        return row[0] if row else None
