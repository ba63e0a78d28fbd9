"""The SQLite store on its own: a locked file, the URLs it accepts, a folder it cannot make (the schema's versions
and upgrades, for both databases, are in test_store.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

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


def test_a_locked_database_is_reported_not_waited_on_forever(tmp_path: Path, svc: Services) -> None:
    svc.store._db.connection.execute("PRAGMA busy_timeout=200")
    holder = sqlite3.connect(svc.store.where, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreError, match="is locked by another process"):
            create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    finally:
        holder.execute("ROLLBACK")
    assert svc.store._db.execute("SELECT COUNT(*) FROM tasks").fetchone()[0] == 0


def test_only_sqlite_and_postgresql_urls_are_accepted() -> None:
    with pytest.raises(ConfigError, match=r"use sqlite:///path/to/file\.db or postgresql://") as refused:
        open_store("mysql://me:secret@db/adaexplore")
    assert "secret" not in str(refused.value)


def test_a_database_whose_folder_cannot_be_made_is_refused_clearly(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreError, match=r"cannot create the database's folder .*a-file"):
        open_store(f"sqlite:///{blocker / 'x.db'}")
    assert blocker.read_text() == "not a folder"
