"""The store: tasks, runs, nodes, evaluations and expansions, on SQLite (one file) or PostgreSQL (a server a team
shares). Every change is one transaction, and writers take turns (`_db.py` says how each database does it)."""

from __future__ import annotations

import contextlib
import json
import secrets
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from adaexplore.domain import Kind
from adaexplore.errors import ConfigError, NotFoundError, StoreError
from adaexplore.store._agent import AgentTables
from adaexplore.store._bench import BenchTables
from adaexplore.store._calibrations import CalibrationTables
from adaexplore.store._claims import ClaimTables
from adaexplore.store._db import Database, one_line
from adaexplore.store._memory import MemoryTables
from adaexplore.store._nodes import NodeTables
from adaexplore.store._postgres import open_postgres
from adaexplore.store._records import EvaluationRecord, ExpansionRecord, RunRecord, TaskRecord, fits
from adaexplore.store._schema import CREATE, SCHEMA_VERSION, UPGRADES
from adaexplore.store._sqlite import open_sqlite

__all__ = ["Store", "StoreCheck", "check_store", "open_store", "store_exists"]

_SQLITE = "sqlite:///"
_POSTGRES = ("postgresql://", "postgres://")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def store_exists(url: str) -> bool:
    """Whether the database a URL names is there already, so that a read-only command need not create it (a
    PostgreSQL database is the server's: it is taken to be there, and connecting says if it is not)."""
    path = url.removeprefix(_SQLITE)
    return path == ":memory:" or not url.startswith(_SQLITE) or Path(path).exists()


@dataclass(frozen=True)
class StoreCheck:
    """What a database holds, read without changing it."""

    where: str  # an SQLite file's path, or a PostgreSQL URL without its password
    server: str | None  # the PostgreSQL server's version; None for SQLite
    schema_version: int | None  # None: no store there yet (the first command that writes makes it)
    runs: int | None
    too_new: bool = False  # its schema is newer than this adaexplore understands


def check_store(url: str) -> StoreCheck:
    """Reach the database a URL names and read its schema version and number of runs, creating, upgrading and
    writing nothing (an SQLite file that is not there is not made).

    Raises:
        ConfigError: the URL is of neither kind, is malformed, or names PostgreSQL without its driver installed.
        StoreError: the server cannot be reached or refused the connection (its message says why, without the
            password), or the database cannot be read.
    """
    if url.startswith(_SQLITE):
        path = url.removeprefix(_SQLITE)
        if path == ":memory:" or not Path(path).exists():
            return StoreCheck(where=path, server=None, schema_version=None, runs=None)
        try:
            with contextlib.closing(sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)) as db:
                return _read_check(db.execute, path, None, lambda name: _sqlite_table(db, name))
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot read the database {path}: {one_line(exc)}") from exc
    if not url.startswith(_POSTGRES):
        raise _unsupported(url)
    server = open_postgres(url)
    try:
        version = str(server.execute("SHOW server_version").fetchone()[0])
        return _read_check(server.execute, server.where, f"PostgreSQL {version}", server.table_exists)
    except server.errors as exc:
        raise StoreError(f"cannot read the database {server.where}: {one_line(exc)}") from exc
    finally:
        server.close()


def _unsupported(url: str) -> ConfigError:
    shown = url.split("@", 1)[-1] if "@" in url else url  # whatever precedes an @ may hold a password
    return ConfigError(
        f"database URL {shown!r} is not supported; use sqlite:///path/to/file.db or "
        "postgresql://USER:PASSWORD@HOST:PORT/DATABASE"
    )


def _sqlite_table(db: sqlite3.Connection, name: str) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)).fetchone() is not None


def _read_check(
    execute: Callable[[str], Any], where: str, server: str | None, table_exists: Callable[[str], bool]
) -> StoreCheck:
    if not table_exists("meta"):
        return StoreCheck(where=where, server=server, schema_version=None, runs=None)
    version = int(execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0])
    runs = int(execute("SELECT COUNT(*) FROM runs").fetchone()[0]) if table_exists("runs") else 0
    return StoreCheck(where=where, server=server, schema_version=version, runs=runs, too_new=version > SCHEMA_VERSION)


def open_store(url: str) -> Store:
    """Open (and create or upgrade) the store a database URL names: sqlite:///PATH or postgresql://...

    Raises:
        ConfigError: the URL is of neither kind, is malformed, or names PostgreSQL without its driver installed.
        StoreError: the database is from a newer adaexplore, locked, not a database, or its server cannot be
            reached or refused the connection.
    """
    db: Database
    if url.startswith(_SQLITE):
        db = open_sqlite(url)
    elif url.startswith(_POSTGRES):
        db = open_postgres(url)  # psycopg is imported here, only for a postgresql:// URL
    else:
        raise _unsupported(url)
    try:
        return Store(db)
    except db.errors as exc:
        db.close()
        raise StoreError(f"cannot use the database {db.where}: {one_line(exc)}") from exc
    except BaseException:
        db.close()
        raise


class Store(NodeTables, MemoryTables, AgentTables, ClaimTables, BenchTables, CalibrationTables):
    def __init__(self, db: Database) -> None:
        self._db = db
        # Answers that callers derive from the store, kept per connection under a name of theirs; each entry
        # holds the key (a version read from the store, at least) it was computed for.
        self.memo: dict[str, tuple[object, object]] = {}
        self._migrate()

    @property
    def where(self) -> str:
        """The database, for messages: a file's path, or a PostgreSQL URL without its password."""
        return self._db.where

    def close(self) -> None:
        self._db.close()

    # transactions --------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _write(self) -> Iterator[Database]:
        """One write transaction, rolled back on any error; one writer at a time holds the database."""
        try:
            with self._db.transaction() as db:
                yield db
        except BaseException:
            self._index_cache = None  # it may hold changes that were just rolled back
            raise

    def _migrate(self) -> None:
        with self._write() as db:
            if not db.table_exists("meta"):
                for statement in CREATE:
                    db.execute(db.schema(statement))
                db.execute("INSERT INTO meta VALUES ('schema_version', '1')")
            version = int(db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"the database {db.where} has schema version {version}, newer than this "
                    f"adaexplore understands ({SCHEMA_VERSION}); upgrade adaexplore or use another "
                    "database (ADAEXPLORE_DB)"
                )
            while version < SCHEMA_VERSION:
                for statement in UPGRADES[version]:
                    db.execute(db.schema(statement))
                version += 1
                db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(version),))

    def meta_get(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def meta_set(self, key: str, value: str) -> None:
        with self._write() as db:
            db.execute(
                "INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value=excluded.value", (key, value)
            )

    @property
    def schema_version(self) -> int:
        return int(self._db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0])

    # tasks ---------------------------------------------------------------------------------------
    def put_task(self, task_id: str, name: str, source: str, origin: str, work: str | None = None) -> TaskRecord:
        """Store a task (a task with the same id, the same normalized source, is kept as it is, but takes `work`,
        what its reference does at full size as JSON, where it had none)."""
        with self._write() as db:
            db.execute(
                "INSERT INTO tasks (id, name, source, origin, created_at, work) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                (task_id, name, source, origin, _now(), work),
            )
            if work is not None:
                db.execute("UPDATE tasks SET work=? WHERE id=? AND work IS NULL", (work, task_id))
        return self.task(task_id)

    def set_task_degeneracy(self, task_id: str, degenerate: str | None, checked: str) -> TaskRecord:
        """Record what a check of the task found of its degeneracy (`degenerate`: domain.Degeneracy as JSON, or None)
        at `checked` sizes ("full" or "small"). A finding at full size is not replaced by one at small sizes."""
        with self._write() as db:
            db.execute(
                "UPDATE tasks SET degenerate=?, degeneracy_checked=? WHERE id=? AND "
                "(degeneracy_checked IS NULL OR degeneracy_checked <> 'full' OR ? = 'full')",
                (degenerate, checked, task_id, checked),
            )
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
            root = db.insert(
                "INSERT INTO nodes (run_id, parent_id, kind, depth, segment, seq, code, code_hash, "
                "context_ids, created_at) VALUES (?, NULL, 'root', 0, NULL, 0, '', '', '[]', ?)",
                (run_id, now),
            )
            db.execute("UPDATE runs SET root_id=? WHERE id=?", (root, run_id))
        return self.run(run_id)

    def run(self, run_id: str) -> RunRecord:
        row = self._db.execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()
        if row is None:
            raise NotFoundError(
                f"no run has id {run_id!r}; start_run returns the ids (`adaexplore runs list`)",
                cli=f"no run has id {run_id!r} in {self.where}; `adaexplore runs list` lists the runs",
            )
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

    def set_run_kernels(self, run_id: str, folder: str) -> None:
        """Record the folder the offline generator serves the run's kernels from.

        Raises:
            NotFoundError: the run id is unknown.
        """
        self.run(run_id)
        with self._write() as db:
            db.execute("UPDATE runs SET kernels=? WHERE id=?", (folder, run_id))

    def give_brief(self, run_id: str, version: str) -> bool:
        """Record that the run's client now holds the run's brief of `version`; whether it held another (or none)
        before, so that the brief must be sent.

        Raises:
            NotFoundError: the run id is unknown.
        """
        self.run(run_id)
        with self._write() as db:
            held = db.execute("SELECT brief_version FROM runs WHERE id=?", (run_id,)).fetchone()[0]
            if held == version:
                return False
            db.execute("UPDATE runs SET brief_version=? WHERE id=?", (version, run_id))
        return True

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
            expansion_id = db.insert(
                "INSERT INTO expansions (run_id, node_id, action, context_ids, created_at) VALUES (?, ?, ?, ?, ?)",
                (run_id, node_id, action.value, json.dumps(context_ids), _now()),
            )
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
