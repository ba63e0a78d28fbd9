"""The SQLite store on its own: schema versions and upgrades, a locked file, the URLs it accepts, a folder
it cannot make."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import adaexplore.store._sqlite as sqlite_store
from adaexplore.config import Settings
from adaexplore.errors import ConfigError, StoreError
from adaexplore.store import open_store
from adaexplore.tools import CreateTaskRequest, Services, create_task
from tests.fakes import FakeEvaluator, by_hash

TASK_FILE = Path(__file__).parents[1] / "executor" / "data" / "scale_relu_task.py"


@pytest.fixture
def svc(tmp_path: Path) -> Services:
    settings = Settings(home=tmp_path)
    return Services(settings=settings, store=open_store(settings.database_url), evaluator=FakeEvaluator(by_hash))


def test_a_newer_database_is_refused_and_an_older_one_upgraded(tmp_path: Path, monkeypatch) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    open_store(url).close()
    current = sqlite_store.SCHEMA_VERSION
    monkeypatch.setattr(sqlite_store, "SCHEMA_VERSION", current + 1)
    monkeypatch.setattr(
        sqlite_store, "UPGRADES", {**sqlite_store.UPGRADES, current: ["ALTER TABLE runs ADD COLUMN note TEXT"]}
    )
    upgraded = open_store(url)
    assert upgraded.schema_version == current + 1
    assert "note" in [r[1] for r in upgraded._db.execute("PRAGMA table_info(runs)")]
    upgraded.close()
    monkeypatch.setattr(sqlite_store, "SCHEMA_VERSION", current)
    with pytest.raises(StoreError, match=f"schema version {current + 1}, newer than this adaexplore understands"):
        open_store(url)


def test_a_locked_database_is_reported_not_waited_on_forever(tmp_path: Path, svc: Services) -> None:
    svc.store._db.execute("PRAGMA busy_timeout=200")
    holder = sqlite3.connect(svc.store.path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreError, match="is locked by another process"):
            create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    finally:
        holder.execute("ROLLBACK")
    assert svc.store._db.execute("SELECT COUNT(*) FROM tasks").fetchone()[0] == 0


def test_only_sqlite_urls_are_accepted(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="use sqlite:///"):
        open_store("postgresql://db/adaexplore")


def test_a_database_whose_folder_cannot_be_made_is_refused_clearly(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreError, match=r"cannot create the database's folder .*a-file"):
        open_store(f"sqlite:///{blocker / 'x.db'}")
    assert blocker.read_text() == "not a folder"
