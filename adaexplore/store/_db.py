"""What the store needs of a database: one connection, SQL with `?` placeholders, and write transactions that
one writer at a time holds. SQLite (`_sqlite.py`) and PostgreSQL (`_postgres.py`) each give it; the store's SQL is
written once, in the dialect both understand (standard upserts, CASE for a scalar maximum, explicit casts)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

__all__ = ["Cursor", "Database", "Row", "one_line"]

Params = Sequence[Any]


class Row(Protocol):
    """A row read by position or by column name; `dict(row)` maps the names to the values."""

    def __getitem__(self, key: int | str, /) -> Any: ...

    def keys(self) -> list[str]: ...

    def __iter__(self) -> Iterator[Any]: ...

    def __len__(self) -> int: ...


class Cursor(Protocol):
    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Database:
    """One connection to a store's database. Reads run on their own (each sees what was committed when it ran);
    writes run in `transaction()`, which lets one writer in at a time across every process on the database."""

    # where the data lives, for messages: a file's path, or a PostgreSQL URL without its password
    where: str
    # the driver's own errors: a database these are raised for cannot be used as a store
    errors: tuple[type[BaseException], ...] = ()

    def execute(self, sql: str, params: Params = ()) -> Cursor:
        raise NotImplementedError

    def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        raise NotImplementedError

    def insert(self, sql: str, params: Params = ()) -> int:
        """Run an INSERT into a table with an `id` key that the database assigns; the new row's id."""
        raise NotImplementedError

    def transaction(self) -> contextlib.AbstractContextManager[Database]:
        """A write transaction: committed at the end, rolled back on any error.

        Raises:
            StoreError: another process held the database's writer lock for too long, or the connection failed.
        """
        raise NotImplementedError

    def table_exists(self, name: str) -> bool:
        raise NotImplementedError

    def schema(self, statement: str) -> str:
        """A statement of `_schema.py` (written for SQLite's types) in this database's types."""
        return statement

    def close(self) -> None:
        raise NotImplementedError


def one_line(exc: BaseException) -> str:
    """A driver's message (often several lines, with hints) on one line."""
    return "; ".join(part.strip() for part in str(exc).splitlines() if part.strip()) or type(exc).__name__
