"""Checking a store (what `adaexplore doctor` shows of it): read, never created, upgraded or written."""

from __future__ import annotations

from pathlib import Path

import pytest

from adaexplore.errors import ConfigError, StoreError
from adaexplore.store import SCHEMA_VERSION, check_store, open_store
from tests.postgres import Server


def _fill(url: str) -> None:
    store = open_store(url)
    try:
        store.put_task("t", "task", "source", "file")
        store.create_run("t", config='{"total_steps": 1}', mode="strict", backend="auto", model="m", seed=1)
    finally:
        store.close()


def test_an_sqlite_store_is_checked_without_being_made(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "adaexplore.db"
    url = f"sqlite:///{path}"
    empty = check_store(url)
    assert (empty.where, empty.server, empty.schema_version, empty.runs) == (str(path), None, None, None)
    assert not path.parent.exists()
    _fill(url)
    found = check_store(url)
    assert (found.schema_version, found.runs, found.too_new) == (SCHEMA_VERSION, 1, False)


def test_a_postgresql_store_is_connected_to_and_read(postgres_server: Server) -> None:
    url = postgres_server.new_database()
    try:
        empty = check_store(url)
        assert empty.server and empty.server.startswith("PostgreSQL ")
        assert (empty.schema_version, empty.runs) == (None, None)
        import psycopg

        with psycopg.connect(url) as db:  # the check made no table
            assert db.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone() == (0,)
        _fill(url)
        found = check_store(url)
        assert (found.schema_version, found.runs, found.too_new) == (SCHEMA_VERSION, 1, False)
    finally:
        postgres_server.drop_database(url)


def test_a_server_that_does_not_answer_or_a_url_of_no_kind_is_refused() -> None:
    with pytest.raises(StoreError, match=r"cannot connect to PostgreSQL at 127\.0\.0\.1:1") as refused:
        check_store("postgresql://me:hunter2@127.0.0.1:1/adaexplore")
    assert "hunter2" not in str(refused.value)
    with pytest.raises(ConfigError, match="is not supported"):
        check_store("mysql://me:hunter2@db/x")
