"""The store on each database (SQLite, and a real PostgreSQL server): a new database is made at the current
schema version, an older one is upgraded, a newer one is refused with both versions."""

from __future__ import annotations

from pathlib import Path

import pytest

import adaexplore.store._store as store_module
from adaexplore.domain import Kind
from adaexplore.errors import NotFoundError, StoreError
from adaexplore.store import SCHEMA_VERSION, NewEvaluation, open_store
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


def test_a_node_and_its_verdict_are_read_in_one_query_each_way(databases: Databases, tmp_path: Path) -> None:
    """node_and_result and node_result (what a step's context and the tie-break read per node) give what the
    separate reads give, None for the root, and name a node of another run or none."""
    store = open_store(databases(tmp_path))
    try:
        store.put_task("t", "task", "source", "file")
        run = store.create_run("t", config="{}", mode="strict", backend="auto", model="m", seed=1)
        other = store.create_run("t", config="{}", mode="strict", backend="auto", model="m", seed=2)
        evaluation = NewEvaluation(
            code_hash="h", environment="e", mode="strict", status="ok", speedup=1.5, result='{"verdict": 1}'
        )
        child = store.add_child(
            run.id, run.root_id, Kind.large, code="kernel", code_hash="h", context_ids=[7], task_id="t",
            evaluation=evaluation, reward=0.5,
        )  # fmt: skip
        record, result = store.node_and_result(child.id)
        assert record == store.node(child.id) and record.context_ids == [7]
        assert result == store.evaluation(child.evaluation_id).result == '{"verdict": 1}'  # type: ignore[arg-type]
        assert store.node_and_result(run.root_id) == (store.node(run.root_id), None)
        assert store.node_result(child.id, run.id) == '{"verdict": 1}'
        assert store.node_result(run.root_id, run.id) is None
        with pytest.raises(NotFoundError, match=f"run {other.id} has no node {child.id}"):
            store.node_result(child.id, other.id)
        with pytest.raises(NotFoundError, match="no node has id 999999"):
            store.node_and_result(999999)
        assert store.view(run).rows() == store.view(run.id).rows()
    finally:
        store.close()


def test_estimated_speedups_rank_correct_nodes_below_measured_ones(databases: Databases, tmp_path: Path) -> None:
    """A node keeps its evaluation's estimated speedup; the run's best, a segment's best and the view rank a
    measured speedup above any estimated one (never compared), then estimates, then nodes with neither; the task
    keeps the record of its reference that create_task gives it, and takes one it lacked later."""
    store = open_store(databases(tmp_path))
    try:
        assert store.put_task("t", "task", "source", "file").work is None
        assert store.put_task("t", "task", "source", "file", work='{"w": 1}').work == '{"w": 1}'
        assert store.put_task("t", "task", "source", "file", work='{"w": 2}').work == '{"w": 1}'  # kept as it was
        run = store.create_run("t", config="{}", mode="strict", backend="auto", model="m", seed=1)

        def child(parent: int, speedup: float | None, estimated: float | None, kind: Kind = Kind.large) -> int:
            evaluation = NewEvaluation(
                code_hash=f"{speedup}-{estimated}-{parent}",
                environment="e",
                mode="strict",
                status="ok",
                speedup=speedup,
                estimated_speedup=estimated,
                result="{}",
            )
            node = store.add_child(
                run.id, parent, kind, code="k", code_hash="h", context_ids=[], task_id="t", evaluation=evaluation,
                reward=0.5,
            )  # fmt: skip
            return node.id

        plain = child(run.root_id, None, None)
        estimated = child(plain, None, 2.5, Kind.small)
        assert store.run(run.id).best_node_id == estimated
        assert store.node(estimated).estimated_speedup == 2.5
        assert store.view(run).segment_best(plain).id == estimated  # type: ignore[union-attr]
        better_guess = child(plain, None, 3.0, Kind.small)
        assert store.run(run.id).best_node_id == better_guess
        measured = child(run.root_id, 0.9, None)  # slower than the estimates, but measured
        assert store.run(run.id).best_node_id == measured
        stats = {n.id: n for n in store.view(run).correct_nodes()}
        assert stats[measured].rank_speed > stats[better_guess].rank_speed > stats[plain].rank_speed
        assert [b.id for b in store.view(run).segment_bests()] == [better_guess, measured]
    finally:
        store.close()
