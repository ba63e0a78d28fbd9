"""A run's nodes: reading them, adding an evaluated child with its back-propagation, and the search's view."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from adaexplore.domain import Kind
from adaexplore.errors import NotFoundError, RequestError
from adaexplore.search import NodeStats, correct
from adaexplore.store._db import Database, Row
from adaexplore.store._records import NodeRecord, RunRecord, fits

__all__ = ["NewEvaluation", "NodeTables", "StoreTreeView"]

_STATS = (
    "id, parent_id, kind, depth, segment, status, speedup, visits, total_reward, max_reward, small_children, children, "
    "estimated_speedup"
)
_NODE = (
    "id, run_id, parent_id, kind, depth, segment, seq, code, code_hash, context_ids, evaluation_id, status, "
    "speedup, estimated_speedup, reward, visits, total_reward, max_reward, small_children, children, created_at"
)
# correct nodes, fastest first: measured speedups above estimated ones (never compared), then the first found
_FASTEST = (
    "(speedup IS NOT NULL) DESC, (estimated_speedup IS NOT NULL) DESC, "
    "COALESCE(speedup, estimated_speedup, 1.0) DESC, id"
)

# a node's columns and the result of its evaluation, read together
_NODE_JOINED = ", ".join(f"n.{column.strip()}" for column in _NODE.split(","))
_WITH_RESULT = "FROM nodes n LEFT JOIN evaluations e ON e.id = n.evaluation_id"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


_NODE_IDS = "; select_uct, get_run and compile_and_profile name a run's nodes (`adaexplore runs show RUN` lists them)"


class NewEvaluation:
    """An evaluation to store with a node: its summary columns and the full result as JSON."""

    def __init__(
        self,
        *,
        code_hash: str,
        environment: str,
        mode: str,
        status: str,
        speedup: float | None,
        result: str,
        estimated_speedup: float | None = None,
        work: str | None = None,
    ) -> None:
        self.code_hash, self.environment, self.mode = code_hash, environment, mode
        self.status, self.speedup, self.result = status, speedup, result
        self.estimated_speedup = estimated_speedup
        # what a kernel a GPU timed launches at full size (Evaluation.forward_work), for `adaexplore calibrate`
        self.work = work


class NodeTables:
    """Mixed into the store: it shares the store's connection and its one-writer transactions."""

    _db: Database
    _write: Callable[[], contextlib.AbstractContextManager[Database]]
    run: Callable[[str], RunRecord]

    @staticmethod
    def _node(row: Row | dict[str, Any]) -> NodeRecord:
        data = dict(row)
        data["context_ids"] = json.loads(data["context_ids"])
        return NodeRecord(**data)

    def node(self, node_id: int, run_id: str | None = None) -> NodeRecord:
        """A node (of `run_id`, when given)."""
        row = (
            self._db.execute(f"SELECT {_NODE} FROM nodes WHERE id=?", (node_id,)).fetchone() if fits(node_id) else None
        )
        if row is None:
            raise NotFoundError(f"no node has id {node_id}{_NODE_IDS}")
        if run_id is not None and row["run_id"] != run_id:
            raise RequestError(f"node {node_id} belongs to run {row['run_id']}, not to run {run_id}")
        return self._node(row)

    def nodes(self, run_id: str) -> list[NodeRecord]:
        return [
            self._node(r) for r in self._db.execute(f"SELECT {_NODE} FROM nodes WHERE run_id=? ORDER BY id", (run_id,))
        ]

    def view(self, run: RunRecord | str) -> StoreTreeView:
        """The search's view of a run: of a run already read, or of the run an id names (checked to exist)."""
        return StoreTreeView(self._db, run.id if isinstance(run, RunRecord) else self.run(run).id)

    def node_and_result(self, node_id: int) -> tuple[NodeRecord, str | None]:
        """A node and the stored result (JSON) of its evaluation, in one query; None for a node without one."""
        row = (
            self._db.execute(
                f"SELECT {_NODE_JOINED}, e.result AS result {_WITH_RESULT} WHERE n.id=?", (node_id,)
            ).fetchone()
            if fits(node_id)
            else None
        )
        if row is None:
            raise NotFoundError(f"no node has id {node_id}{_NODE_IDS}")
        data = dict(row)
        result = data.pop("result")
        return self._node(data), result

    def node_result(self, node_id: int, run_id: str) -> str | None:
        """The stored result (JSON) of the evaluation of `node_id` in `run_id` alone (not the node's code), in one
        query; None for a node without one (the root).

        Raises:
            NotFoundError: the run has no such node.
        """
        row = (
            self._db.execute(
                f"SELECT e.result {_WITH_RESULT} WHERE n.id=? AND n.run_id=?", (node_id, run_id)
            ).fetchone()
            if fits(node_id)
            else None
        )
        if row is None:
            raise NotFoundError(f"run {run_id} has no node {node_id}")
        return row[0]

    def run_holds_evaluation(self, run_id: str, evaluation_id: int) -> bool:
        """Whether a node of the run holds the evaluation."""
        row = self._db.execute(
            "SELECT 1 FROM nodes WHERE run_id=? AND evaluation_id=? LIMIT 1", (run_id, evaluation_id)
        ).fetchone()
        return row is not None

    def latest_evaluated_node(self, run_id: str) -> int | None:
        """The run's newest node that holds an evaluation (None: only the root)."""
        row = self._db.execute(
            "SELECT id FROM nodes WHERE run_id=? AND evaluation_id IS NOT NULL ORDER BY id DESC LIMIT 1", (run_id,)
        ).fetchone()
        return int(row["id"]) if row is not None else None

    def latest_checked_node(self, run_id: str) -> int | None:
        """The run's newest node whose outputs were compared with the reference (it came back ok or mismatch),
        None while there is none: its evaluation says what the evaluator found about the task."""
        row = self._db.execute(
            "SELECT id FROM nodes WHERE run_id=? AND status IN ('ok', 'mismatch') ORDER BY id DESC LIMIT 1", (run_id,)
        ).fetchone()
        return int(row["id"]) if row is not None else None

    def add_child(
        self,
        run_id: str,
        parent_id: int,
        kind: Kind,
        *,
        code: str,
        code_hash: str,
        context_ids: list[int],
        task_id: str,
        evaluation: NewEvaluation | int,
        reward: float,
        expansion_id: int | None = None,
        claim_id: int | None = None,
    ) -> NodeRecord:
        """Add an evaluated child, store its evaluation (or reuse one by id), and back-propagate its reward to
        every ancestor, all in one transaction; with `expansion_id`, the expansion it was made from records it,
        and with `claim_id`, the step's claim is removed in that transaction (the step is no longer under way).

        Raises:
            RequestError: the parent is in another run, or is asked for a step it cannot take.
        """
        if kind is Kind.root:
            raise RequestError("a run has one root; a child is a small or a large step")
        with self._write() as db:
            parent = db.execute("SELECT run_id, kind, depth, segment FROM nodes WHERE id=?", (parent_id,)).fetchone()
            if parent is None:
                raise NotFoundError(f"no node has id {parent_id}{_NODE_IDS}")
            if parent["run_id"] != run_id:
                raise RequestError(f"node {parent_id} belongs to run {parent['run_id']}, not to run {run_id}")
            if kind is Kind.small and parent["kind"] == Kind.root:
                raise RequestError("the root has no kernel to edit; take a large step from it")
            now = _now()
            if isinstance(evaluation, int):
                row = db.execute(
                    "SELECT status, speedup, estimated_speedup FROM evaluations WHERE id=?", (evaluation,)
                ).fetchone()
                evaluation_id, status, speedup = evaluation, row["status"], row["speedup"]
                estimated = row["estimated_speedup"]
            else:
                evaluation_id = db.insert(
                    "INSERT INTO evaluations (task_id, code_hash, environment, mode, status, speedup, "
                    "estimated_speedup, result, created_at, work) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        task_id,
                        evaluation.code_hash,
                        evaluation.environment,
                        evaluation.mode,
                        evaluation.status,
                        evaluation.speedup,
                        evaluation.estimated_speedup,
                        evaluation.result,
                        now,
                        evaluation.work,
                    ),
                )
                status, speedup = evaluation.status, evaluation.speedup
                estimated = evaluation.estimated_speedup
            run = db.execute("SELECT steps, best_node_id FROM runs WHERE id=?", (run_id,)).fetchone()
            seq = run["steps"] + 1
            node_id = db.insert(
                "INSERT INTO nodes (run_id, parent_id, kind, depth, segment, seq, code, code_hash, context_ids, "
                "evaluation_id, status, speedup, estimated_speedup, reward, correct, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    parent_id,
                    kind.value,
                    parent["depth"] + 1,
                    parent["segment"],
                    seq,
                    code,
                    code_hash,
                    json.dumps(context_ids),
                    evaluation_id,
                    status,
                    speedup,
                    estimated,
                    reward,
                    int(correct(status)),
                    now,
                ),
            )
            if kind is Kind.large:
                db.execute("UPDATE nodes SET segment=? WHERE id=?", (node_id, node_id))
            db.execute(
                "UPDATE nodes SET children=children+1, small_children=small_children+? WHERE id=?",
                (int(kind is Kind.small), parent_id),
            )
            db.execute(
                "WITH RECURSIVE up(id) AS (SELECT CAST(? AS BIGINT) UNION ALL SELECT n.parent_id FROM nodes n "
                "JOIN up ON n.id = up.id WHERE n.parent_id IS NOT NULL) "
                "UPDATE nodes SET visits=visits+1, total_reward=total_reward+?, "
                "max_reward=CASE WHEN max_reward >= ? THEN max_reward ELSE ? END "
                "WHERE id IN (SELECT id FROM up)",
                (node_id, reward, reward, reward),
            )
            best = run["best_node_id"]
            if correct(status) and (best is None or self._better(db, node_id, best)):
                best = node_id
            db.execute(
                "UPDATE runs SET steps=?, best_node_id=?, updated_at=?, stop_reason=NULL, "
                "status=CASE status WHEN 'stopped' THEN 'running' ELSE status END WHERE id=?",
                (seq, best, now, run_id),
            )
            if expansion_id is not None:
                made = db.execute("SELECT children FROM expansions WHERE id=?", (expansion_id,)).fetchone()
                if made is not None:
                    children = [*json.loads(made["children"]), node_id]
                    db.execute("UPDATE expansions SET children=? WHERE id=?", (json.dumps(children), expansion_id))
            if claim_id is not None:
                db.execute("DELETE FROM claims WHERE id=?", (claim_id,))
        return self.node(node_id)

    @staticmethod
    def _better(db: Database, candidate: int, incumbent: int) -> bool:
        """Whether `candidate` ranks above `incumbent` (see `_FASTEST`); a tie keeps the first found."""
        first = db.execute(
            f"SELECT id FROM nodes WHERE id IN (?, ?) ORDER BY {_FASTEST} LIMIT 1", (candidate, incumbent)
        ).fetchone()
        return bool(first["id"] == candidate)


class StoreTreeView:
    """The search's view of one run, read straight from the database (nothing is held between calls)."""

    def __init__(self, db: Database, run_id: str) -> None:
        self._db = db
        self.run_id = run_id

    @staticmethod
    def _stats(row: Row) -> NodeStats:
        return NodeStats(
            id=row["id"],
            parent=row["parent_id"],
            kind=Kind(row["kind"]),
            depth=row["depth"],
            segment=row["segment"],
            status=row["status"],
            speedup=row["speedup"],
            visits=row["visits"],
            total_reward=row["total_reward"],
            max_reward=row["max_reward"],
            small_children=row["small_children"],
            children=row["children"],
            estimated_speedup=row["estimated_speedup"],
        )

    def node(self, node_id: int) -> NodeStats:
        row = self._db.execute(f"SELECT {_STATS} FROM nodes WHERE id=? AND run_id=?", (node_id, self.run_id)).fetchone()
        if row is None:
            raise NotFoundError(f"run {self.run_id} has no node {node_id}")
        return self._stats(row)

    def children(self, node_id: int) -> list[NodeStats]:
        return [
            self._stats(r)
            for r in self._db.execute(f"SELECT {_STATS} FROM nodes WHERE parent_id=? ORDER BY id", (node_id,))
        ]

    def segment_best(self, segment: int) -> NodeStats | None:
        row = self._db.execute(
            f"SELECT {_STATS} FROM nodes WHERE segment=? AND correct=1 ORDER BY {_FASTEST} LIMIT 1",
            (segment,),
        ).fetchone()
        return self._stats(row) if row else None

    def segment_bests(self) -> list[NodeStats]:
        rows = self._db.execute(
            f"SELECT {_STATS} FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY segment ORDER BY {_FASTEST}) AS rank "
            "FROM nodes WHERE run_id=? AND correct=1) AS ranked WHERE rank=1 ORDER BY segment",
            (self.run_id,),
        )
        return [self._stats(r) for r in rows]

    def correct_nodes(self) -> list[NodeStats]:
        """The run's correct nodes, in id order (what the choice of its best kernel reads)."""
        return [
            self._stats(r)
            for r in self._db.execute(
                f"SELECT {_STATS} FROM nodes WHERE run_id=? AND correct=1 ORDER BY id", (self.run_id,)
            )
        ]

    def shape(self) -> tuple[int, int, dict[str, int]]:
        """The tree's node count, its depth, and its nodes counted by verdict, from aggregates (no rows)."""
        nodes, depth = 0, 0
        counts: dict[str, int] = {}
        rows = self._db.execute(
            "SELECT status, COUNT(*), MAX(depth) FROM nodes WHERE run_id=? GROUP BY status", (self.run_id,)
        )
        for status, count, deepest in rows:
            nodes, depth = nodes + count, max(depth, deepest)
            if status is not None:
                counts[status] = count
        return nodes, depth, counts

    def rows(self) -> list[dict[str, Any]]:
        return [
            dict(r) for r in self._db.execute(f"SELECT {_STATS} FROM nodes WHERE run_id=? ORDER BY id", (self.run_id,))
        ]
