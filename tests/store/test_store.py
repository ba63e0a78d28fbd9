"""The store on each database (SQLite, and a real PostgreSQL server): a new database is made at the current
schema version, an older one is upgraded, a newer one is refused with both versions."""

from __future__ import annotations

from pathlib import Path

import pytest

import adaexplore.store._store as store_module
from adaexplore.errors import StoreError
from adaexplore.store import SCHEMA_VERSION, open_store
from tests.conftest import Databases


def test_a_new_database_is_made_at_the_current_version(databases: Databases, tmp_path: Path) -> None:
    store = open_store(databases(tmp_path))
    try:
        assert store.schema_version == SCHEMA_VERSION
        store.put_task("t", "task", "source", "file")
        run = store.create_run("t", config="{}", mode="strict", backend="auto", model="m", seed=1)
        assert [n.id for n in store.nodes(run.id)] == [run.root_id]
    finally:
        store.close()


def test_a_newer_database_is_refused_and_an_older_one_upgraded(
    databases: Databases, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = databases(tmp_path)
    open_store(url).close()
    current = store_module.SCHEMA_VERSION
    monkeypatch.setattr(store_module, "SCHEMA_VERSION", current + 1)
    monkeypatch.setattr(
        store_module, "UPGRADES", {**store_module.UPGRADES, current: ["ALTER TABLE runs ADD COLUMN note TEXT"]}
    )
    upgraded = open_store(url)
    assert upgraded.schema_version == current + 1
    assert upgraded._db.execute("SELECT COUNT(note) FROM runs").fetchone()[0] == 0  # the column is there
    upgraded.close()
    monkeypatch.setattr(store_module, "SCHEMA_VERSION", current)
    with pytest.raises(StoreError, match=f"schema version {current + 1}, newer than this adaexplore understands"):
        open_store(url)
