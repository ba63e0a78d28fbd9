"""Steps under way: a claim is written when a step's evaluation starts and removed when it lands or fails.

Every process on the database sees every other's claims, so two servers on one run together cannot take
more steps than the run has, or more small steps from a node than its limit. A claim whose process has
died (killed, crashed) stops counting: its owner is a process id on a host, and a process that is gone
from this host, or a claim older than `CLAIM_MAX_AGE_S`, is ignored and removed at the next claim.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict

from adaexplore.store._db import Database

__all__ = ["CLAIM_MAX_AGE_S", "ClaimRecord", "ClaimSpec", "ClaimTables"]

# Longer than any one evaluation or finish_run can take; past it a claim is taken for a leftover of a process
# whose id a new process now has.
CLAIM_MAX_AGE_S = 3 * 3600.0


class ClaimSpec(BaseModel):
    """What a step under way holds: its run, its parent and kind, and the (expansion, code hash) it was sent for."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str
    parent_id: int | None
    kind: str  # 'large', 'small', or 'finish' (finish_run re-measuring the run's best kernels)
    expansion_id: int | None = None
    code_hash: str | None = None


class ClaimRecord(ClaimSpec):
    id: int
    host: str
    pid: int
    created_at: str


def _alive(claim: ClaimRecord, host: str, now: datetime) -> bool:
    if (now - datetime.fromisoformat(claim.created_at)).total_seconds() > CLAIM_MAX_AGE_S:
        return False
    if claim.host != host or claim.pid == os.getpid():
        return True  # a process elsewhere cannot be asked; this process releases its own
    try:
        os.kill(claim.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    return True


class ClaimTables:
    """Mixed into the store: it shares the store's connection and its one-writer transactions."""

    _db: Database
    _write: Callable[[], contextlib.AbstractContextManager[Database]]

    def claims(self, run_id: str) -> list[ClaimRecord]:
        """The live claims on a run, from every process."""
        rows = self._db.execute("SELECT * FROM claims WHERE run_id=? ORDER BY id", (run_id,)).fetchall()
        if not rows:
            return []
        host, now = socket.gethostname(), datetime.now(UTC)
        return [c for c in (ClaimRecord(**dict(r)) for r in rows) if _alive(c, host, now)]

    def claim(self, check: Callable[[], ClaimSpec]) -> int:
        """Run `check` and write the claim it returns, in one write transaction: what `check` reads (the run,
        its nodes, `claims`) cannot change before the claim is written. An exception from `check` writes
        nothing and propagates. Claims of processes that are gone are removed first."""
        host, now = socket.gethostname(), datetime.now(UTC)
        with self._write() as db:
            rows = db.execute("SELECT * FROM claims").fetchall()
            dead = [c.id for c in (ClaimRecord(**dict(r)) for r in rows) if not _alive(c, host, now)]
            db.executemany("DELETE FROM claims WHERE id=?", [(i,) for i in dead])
            spec = check()
            return db.insert(
                "INSERT INTO claims (run_id, parent_id, kind, expansion_id, code_hash, host, pid, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    spec.run_id,
                    spec.parent_id,
                    spec.kind,
                    spec.expansion_id,
                    spec.code_hash,
                    host,
                    os.getpid(),
                    now.isoformat(timespec="milliseconds"),
                ),
            )

    def release_claim(self, claim_id: int) -> None:
        """Remove a claim (a claim already removed, by the step that landed, is no error)."""
        with self._write() as db:
            db.execute("DELETE FROM claims WHERE id=?", (claim_id,))
