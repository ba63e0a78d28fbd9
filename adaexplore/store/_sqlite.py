"""SQLite under the store: one file, WAL journal, one writer at a time (SQLite's own lock)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path

from adaexplore.errors import StoreError
from adaexplore.store._db import Cursor, Database, Params

__all__ = ["SqliteDatabase", "open_sqlite"]

PREFIX = "sqlite:///"


def open_sqlite(url: str) -> SqliteDatabase:
    """The database a sqlite:/// URL names, its folder made if need be.

    Raises:
        StoreError: the folder cannot be made, or the file is not a database.
    """
    path = url.removeprefix(PREFIX)
    if path != ":memory:":
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot create the database's folder {Path(path).parent}: {exc.strerror or exc}; "
                "point ADAEXPLORE_DB or ADAEXPLORE_HOME at a writable folder"
            ) from exc
    return SqliteDatabase(path)


class SqliteDatabase(Database):
    errors = (sqlite3.DatabaseError,)

    def __init__(self, path: str) -> None:
        self.path = self.where = path
        try:
            self.connection = sqlite3.connect(path, isolation_level=None, timeout=10.0, check_same_thread=False)
            self.connection.row_factory = sqlite3.Row
            self.connection.execute("PRAGMA journal_mode=WAL")
            self.connection.execute("PRAGMA synchronous=NORMAL")
            self.connection.execute("PRAGMA foreign_keys=ON")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot use the database {path}: {exc}") from exc

    def execute(self, sql: str, params: Params = ()) -> Cursor:
        return self.connection.execute(sql, params)

    def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        self.connection.executemany(sql, rows)

    def insert(self, sql: str, params: Params = ()) -> int:
        row_id = self.connection.execute(sql, params).lastrowid
        assert row_id is not None
        return row_id

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Database]:
        try:
            self.connection.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise StoreError(
                f"the database {self.path} is locked by another process ({exc}); try again when it finishes"
            ) from exc
        try:
            yield self
        except BaseException:
            self.connection.execute("ROLLBACK")
            raise
        else:
            self.connection.execute("COMMIT")

    def table_exists(self, name: str) -> bool:
        query = "SELECT name FROM sqlite_master WHERE type='table' AND name=?"
        return self.connection.execute(query, (name,)).fetchone() is not None

    def close(self) -> None:
        self.connection.close()
