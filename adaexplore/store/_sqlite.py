"""The store on SQLite: one file, WAL journal, one writer at a time, every change one transaction."""

from __future__ import annotations

import contextlib
import json
import secrets
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from adaexplore.domain import Kind
from adaexplore.errors import ConfigError, NotFoundError, RequestError, StoreError
from adaexplore.search import NodeStats, correct
from adaexplore.store._agent import AgentTables
from adaexplore.store._bench import BenchTables
from adaexplore.store._claims import ClaimTables
from adaexplore.store._memory import MemoryTables
from adaexplore.store._records import (
    EvaluationRecord,
    ExpansionRecord,
    NodeRecord,
    RunRecord,
    TaskRecord,
    fits,
)
from adaexplore.store._schema import CREATE, SCHEMA_VERSION, UPGRADES

__all__ = ["NewEvaluation", "SqliteStore", "SqliteTreeView", "open_store", "store_exists"]

_STATS = (
    "id, parent_id, kind, depth, segment, status, speedup, visits, total_reward, max_reward, small_children, children"
)
_NODE = (
    "id, run_id, parent_id, kind, depth, segment, seq, code, code_hash, context_ids, evaluation_id, status, "
    "speedup, reward, visits, total_reward, max_reward, small_children, children, created_at"
)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


_NODE_IDS = "; select_uct, get_run and compile_and_profile name a run's nodes (`adaexplore runs show RUN` lists them)"


def store_exists(url: str) -> bool:
    """Whether the database a URL names is there already, so that a read-only command need not create it."""
    path = url.removeprefix("sqlite:///")
    return path == ":memory:" or not url.startswith("sqlite:///") or Path(path).exists()


def open_store(url: str) -> SqliteStore:
    """Open (and create or upgrade) the store a database URL names.

    Raises:
        ConfigError: the URL is not an sqlite URL.
        StoreError: the database is from a newer adaexplore, locked, or not a database.
    """
    prefix = "sqlite:///"
    if not url.startswith(prefix):
        raise ConfigError(f"database URL {url!r} is not supported; use sqlite:///path/to/file.db")
    path = url.removeprefix(prefix)
    if path != ":memory:":
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot create the database's folder {Path(path).parent}: {exc.strerror or exc}; "
                "point ADAEXPLORE_DB or ADAEXPLORE_HOME at a writable folder"
            ) from exc
    return SqliteStore(path)


class NewEvaluation:
    """An evaluation to store with a node: its summary columns and the full result as JSON."""

    def __init__(
        self, *, code_hash: str, environment: str, mode: str, status: str, speedup: float | None, result: str
    ) -> None:
        self.code_hash, self.environment, self.mode = code_hash, environment, mode
        self.status, self.speedup, self.result = status, speedup, result


class SqliteStore(MemoryTables, AgentTables, ClaimTables, BenchTables):
    def __init__(self, path: str) -> None:
        self.path = path
        # Answers that callers derive from the store, kept per connection under a name of theirs; each entry
        # holds the key (a version read from the store, at least) it was computed for.
        self.memo: dict[str, tuple[object, object]] = {}
        try:
            self._db = sqlite3.connect(path, isolation_level=None, timeout=10.0, check_same_thread=False)
            self._db.row_factory = sqlite3.Row
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot use the database {path}: {exc}") from exc

    def close(self) -> None:
        self._db.close()

    # transactions --------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; SQLite lets one writer in at a time and rolls back on any error."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise StoreError(
                f"the database {self.path} is locked by another process ({exc}); try again when it finishes"
            ) from exc
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            self._index_cache = None  # it may hold changes that were just rolled back
            raise
        else:
            self._db.execute("COMMIT")

    def _migrate(self) -> None:
        with self._write() as db:
            exists = db.execute("SELECT name FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
            if not exists:
                for statement in CREATE:
                    db.execute(statement)
                db.execute("INSERT INTO meta VALUES ('schema_version', '1')")
            version = int(db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"the database {self.path} has schema version {version}, newer than this "
                    f"adaexplore understands ({SCHEMA_VERSION}); upgrade adaexplore or use another "
                    "database (ADAEXPLORE_DB)"
                )
            while version < SCHEMA_VERSION:
                for statement in UPGRADES[version]:
                    db.execute(statement)
                version += 1
                db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(version),))

    def meta_get(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def meta_set(self, key: str, value: str) -> None:
        with self._write() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    @property
    def schema_version(self) -> int:
        return int(self._db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0])

    # tasks ---------------------------------------------------------------------------------------
    def put_task(self, task_id: str, name: str, source: str, origin: str) -> TaskRecord:
        """Store a task (a task with the same id, the same normalized source, is kept as it is)."""
        with self._write() as db:
            db.execute("INSERT OR IGNORE INTO tasks VALUES (?, ?, ?, ?, ?)", (task_id, name, source, origin, _now()))
        return self.task(task_id)

    def task(self, task_id: str) -> TaskRecord:
        row = self._db.execute("SELECT * FROM tasks WHERE id=?", (task_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no task has id {task_id!r}; create_task returns the ids")
        return TaskRecord(**dict(row))

    def tasks(self) -> list[TaskRecord]:
        return [TaskRecord(**dict(r)) for r in self._db.execute("SELECT * FROM tasks ORDER BY created_at")]

    # runs ----------------------------------------------------------------------------------------
    def create_run(
        self, task_id: str, *, config: str, mode: str, backend: str, model: str, seed: int, with_compile: bool = False
    ) -> RunRecord:
        """A new run on a task, with its root node; `with_compile`: every evaluation also times torch.compile."""
        self.task(task_id)
        run_id = f"run-{secrets.token_hex(4)}"
        now = _now()
        with self._write() as db:
            db.execute(
                "INSERT INTO runs (id, task_id, config, mode, backend, model, seed, status, created_at, "
                "updated_at, with_compile) VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?)",
                (run_id, task_id, config, mode, backend, model, seed, now, now, int(with_compile)),
            )
            root = db.execute(
                "INSERT INTO nodes (run_id, parent_id, kind, depth, segment, seq, code, code_hash, "
                "context_ids, created_at) VALUES (?, NULL, 'root', 0, NULL, 0, '', '', '[]', ?)",
                (run_id, now),
            ).lastrowid
            db.execute("UPDATE runs SET root_id=? WHERE id=?", (root, run_id))
        return self.run(run_id)

    def run(self, run_id: str) -> RunRecord:
        row = self._db.execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no run has id {run_id!r}; start_run returns the ids (`adaexplore runs list`)")
        return RunRecord(**dict(row))

    def runs(self) -> list[RunRecord]:
        return [RunRecord(**dict(r)) for r in self._db.execute("SELECT * FROM runs ORDER BY created_at")]

    def stop_run(self, run_id: str, reason: str) -> RunRecord:
        """Record that a run stopped short of its steps, and why; the next step added opens it again."""
        self.run(run_id)
        with self._write() as db:
            db.execute(
                "UPDATE runs SET status='stopped', stop_reason=?, updated_at=? WHERE id=? AND status<>'finished'",
                (reason, _now(), run_id),
            )
        return self.run(run_id)

    def finish_run(self, run_id: str, final_node_id: int | None, final_result: str) -> RunRecord:
        """Mark a run finished with the winner of its final re-evaluation."""
        self.run(run_id)
        with self._write() as db:
            db.execute(
                "UPDATE runs SET status='finished', stop_reason=NULL, final_node_id=?, final_result=?, updated_at=? "
                "WHERE id=?",
                (final_node_id, final_result, _now(), run_id),
            )
        return self.run(run_id)

    # nodes ---------------------------------------------------------------------------------------
    @staticmethod
    def _node(row: sqlite3.Row) -> NodeRecord:
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

    def view(self, run_id: str) -> SqliteTreeView:
        run = self.run(run_id)
        return SqliteTreeView(self._db, run.id)

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
                row = db.execute("SELECT status, speedup FROM evaluations WHERE id=?", (evaluation,)).fetchone()
                evaluation_id, status, speedup = evaluation, row["status"], row["speedup"]
            else:
                evaluation_id = db.execute(
                    "INSERT INTO evaluations (task_id, code_hash, environment, mode, status, speedup, result, "
                    "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        task_id,
                        evaluation.code_hash,
                        evaluation.environment,
                        evaluation.mode,
                        evaluation.status,
                        evaluation.speedup,
                        evaluation.result,
                        now,
                    ),
                ).lastrowid
                status, speedup = evaluation.status, evaluation.speedup
            run = db.execute("SELECT steps, best_node_id FROM runs WHERE id=?", (run_id,)).fetchone()
            seq = run["steps"] + 1
            node_id = db.execute(
                "INSERT INTO nodes (run_id, parent_id, kind, depth, segment, seq, code, code_hash, context_ids, "
                "evaluation_id, status, speedup, reward, correct, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                    reward,
                    int(correct(status)),
                    now,
                ),
            ).lastrowid
            if kind is Kind.large:
                db.execute("UPDATE nodes SET segment=? WHERE id=?", (node_id, node_id))
            db.execute(
                "UPDATE nodes SET children=children+1, small_children=small_children+? WHERE id=?",
                (int(kind is Kind.small), parent_id),
            )
            db.execute(
                "WITH RECURSIVE up(id) AS (SELECT ? UNION ALL SELECT n.parent_id FROM nodes n JOIN up ON n.id = up.id "
                "WHERE n.parent_id IS NOT NULL) "
                "UPDATE nodes SET visits=visits+1, total_reward=total_reward+?, max_reward=MAX(max_reward, ?) "
                "WHERE id IN (SELECT id FROM up)",
                (node_id, reward, reward),
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
    def _better(db: sqlite3.Connection, candidate: int, incumbent: int) -> bool:
        rows = {
            r["id"]: r["speedup"]
            for r in db.execute("SELECT id, speedup FROM nodes WHERE id IN (?, ?)", (candidate, incumbent))
        }
        return (rows[candidate] if rows[candidate] is not None else 1.0) > (
            rows[incumbent] if rows[incumbent] is not None else 1.0
        )

    # evaluations and expansions --------------------------------------------------------------------
    def find_evaluations(self, task_id: str, code_hash: str, environment: str, mode: str) -> list[EvaluationRecord]:
        """Stored evaluations of this code for this task, environment and mode, oldest first."""
        rows = self._db.execute(
            "SELECT * FROM evaluations WHERE task_id=? AND code_hash=? AND environment=? AND mode=? ORDER BY id",
            (task_id, code_hash, environment, mode),
        ).fetchall()
        return [EvaluationRecord(**dict(row)) for row in rows]

    def evaluation(self, evaluation_id: int) -> EvaluationRecord:
        row = (
            self._db.execute("SELECT * FROM evaluations WHERE id=?", (evaluation_id,)).fetchone()
            if fits(evaluation_id)
            else None
        )
        if row is None:
            raise NotFoundError(f"no evaluation has id {evaluation_id}")
        return EvaluationRecord(**dict(row))

    def add_expansion(self, run_id: str, node_id: int, action: Kind, context_ids: list[int]) -> ExpansionRecord:
        with self._write() as db:
            expansion_id = db.execute(
                "INSERT INTO expansions (run_id, node_id, action, context_ids, created_at) VALUES (?, ?, ?, ?, ?)",
                (run_id, node_id, action.value, json.dumps(context_ids), _now()),
            ).lastrowid
        return self.expansion(expansion_id)

    def expansion(self, expansion_id: int) -> ExpansionRecord:
        row = (
            self._db.execute("SELECT * FROM expansions WHERE id=?", (expansion_id,)).fetchone()
            if fits(expansion_id)
            else None
        )
        if row is None:
            raise NotFoundError(f"no expansion has id {expansion_id}; expand_node returns the ids")
        data = dict(row)
        data["context_ids"] = json.loads(data["context_ids"])
        data["children"] = json.loads(data["children"])
        return ExpansionRecord(**data)


class SqliteTreeView:
    """The search's view of one run, read straight from the database (nothing is held between calls)."""

    def __init__(self, db: sqlite3.Connection, run_id: str) -> None:
        self._db = db
        self.run_id = run_id

    @staticmethod
    def _stats(row: sqlite3.Row) -> NodeStats:
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
            f"SELECT {_STATS} FROM nodes WHERE segment=? AND correct=1 "
            "ORDER BY COALESCE(speedup, 1.0) DESC, id LIMIT 1",
            (segment,),
        ).fetchone()
        return self._stats(row) if row else None

    def segment_bests(self) -> list[NodeStats]:
        rows = self._db.execute(
            f"SELECT {_STATS} FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY segment ORDER BY "
            "COALESCE(speedup, 1.0) DESC, id) AS rank FROM nodes WHERE run_id=? AND correct=1) WHERE rank=1 "
            "ORDER BY segment",
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
