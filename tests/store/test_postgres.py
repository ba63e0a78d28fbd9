"""The store on a real PostgreSQL server: its URLs and their faults in one line (never with the password),
writers taking turns across connections (the step claims of servers on several hosts), a lock held too long,
and a connection the server ended."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from adaexplore.domain import Kind
from adaexplore.errors import ConfigError, ConflictError, StoreError
from adaexplore.store import ClaimSpec, NewEvaluation, Store, open_store
from adaexplore.store._postgres import WRITER_LOCK
from tests.postgres import Server


@pytest.fixture
def url(postgres_server: Server) -> Iterator[str]:
    made = postgres_server.store_database()
    yield made
    postgres_server.give_back(made)


def _admin(url: str):
    import psycopg

    return psycopg.connect(url, autocommit=True)


def _new_run(store: Store, total: int = 5) -> str:
    store.put_task("t", "task", "source", "file")
    return store.create_run(
        "t", config=f'{{"total_steps": {total}}}', mode="strict", backend="auto", model="m", seed=1
    ).id


def _evaluation(speedup: float) -> NewEvaluation:
    return NewEvaluation(code_hash="h", environment="e", mode="strict", status="ok", speedup=speedup, result="{}")


@pytest.mark.parametrize(
    "url", ["postgresql://me:hunter2@db.example/adaexplore?colour=blue", "postgresql://me:hunter2@[db/x"]
)
def test_a_malformed_url_is_a_config_error_without_its_password(url: str) -> None:
    with pytest.raises(ConfigError, match="is not a valid PostgreSQL URL") as refused:
        open_store(url)
    message = str(refused.value)
    assert "hunter2" not in message and "me:***@" in message and "\n" not in message


def test_a_server_that_does_not_answer_is_named_in_one_line_without_the_password() -> None:
    started = time.monotonic()
    with pytest.raises(StoreError, match=r"cannot connect to PostgreSQL at 127\.0\.0\.1:1, database adaexplore") as e:
        open_store("postgresql://me:hunter2@127.0.0.1:1/adaexplore")
    assert time.monotonic() - started < 10
    assert "hunter2" not in str(e.value) and "\n" not in str(e.value)


def test_a_database_that_does_not_exist_gets_the_servers_message(url: str) -> None:
    missing = urlsplit(url)._replace(path="/no_such_database").geturl()
    with pytest.raises(StoreError, match='database "no_such_database" does not exist'):
        open_store(missing)


def test_a_wrong_password_gets_the_servers_message_and_never_shows_the_password(
    url: str, postgres_server: Server
) -> None:
    import psycopg

    role = "adaexplore_pw_test"
    with psycopg.connect(postgres_server.url, autocommit=True) as admin:
        admin.execute(f"DROP ROLE IF EXISTS {role}")
        admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'right-one'")
    try:
        parts = urlsplit(url)
        at = parts.netloc.rpartition("@")[2]
        wrong = parts._replace(netloc=f"{role}:hunter2@{at}").geturl()
        try:
            open_store(wrong).close()
        except StoreError as exc:
            assert f'password authentication failed for user "{role}"' in str(exc)
            assert "hunter2" not in str(exc) and "\n" not in str(exc)
        else:
            pytest.skip("this test server lets every local user in without a password (ADAEXPLORE_TEST_POSTGRES)")
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP OWNED BY {role}")  # what it made, had the server let it in
            admin.execute(f"DROP ROLE {role}")


def test_without_psycopg_the_message_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg fails as if it were not installed
    with pytest.raises(ConfigError, match=r"pip install 'adaexplore\[postgres\]'"):
        open_store("postgresql://me:hunter2@db.example/adaexplore")


def test_numbers_come_back_as_stored(url: str) -> None:
    store = open_store(url)
    run = _new_run(store)
    speedup = 1.2345678901234567  # a double, not PostgreSQL's 32-bit REAL
    node = store.add_child(
        run, store.run(run).root_id, Kind.large, code="k", code_hash="h", context_ids=[], task_id="t",
        evaluation=_evaluation(speedup), reward=0.5,
    )  # fmt: skip
    assert store.node(node.id).speedup == speedup and store.run(run).best_node_id == node.id
    assert store.usage().input_tokens == 0 and isinstance(store.usage().cost_usd, float)
    store.close()


def test_concurrent_claims_from_many_connections_never_overshoot(url: str) -> None:
    """Each claim's check reads the claims and refuses past the limit; without the writers taking turns two
    checks would read the same count (READ COMMITTED) and both claim."""
    limit, threads = 3, 8
    first = open_store(url)
    run = _new_run(first)
    stores = [open_store(url) for _ in range(threads)]
    start = threading.Barrier(threads)
    outcomes: list[str] = []

    def take(store: Store) -> None:
        def check() -> ClaimSpec:
            taken = len(store.claims(run))
            time.sleep(0.02)  # another connection's check runs meanwhile, if it can
            if taken >= limit:
                raise ConflictError("full")
            return ClaimSpec(run_id=run, parent_id=None, kind="large")

        start.wait()
        try:
            store.claim(check)
            outcomes.append("claimed")
        except ConflictError:
            outcomes.append("refused")

    workers = [threading.Thread(target=take, args=(s,)) for s in stores]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert sorted(outcomes) == ["claimed"] * limit + ["refused"] * (threads - limit)
    assert len(first.claims(run)) == limit
    for s in [first, *stores]:
        s.close()


def test_a_writer_lock_held_too_long_is_reported_and_nothing_is_written(url: str) -> None:
    store = open_store(url)
    store._db.connection.execute("SET lock_timeout = '200ms'")
    with _admin(url) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (WRITER_LOCK,))
        with pytest.raises(StoreError, match="is locked by another process"):
            store.put_task("t", "task", "source", "file")
    assert store.tasks() == []
    store.put_task("t", "task", "source", "file")  # the lock is free again
    assert [t.id for t in store.tasks()] == ["t"]
    store.close()


def test_a_connection_the_server_ended_is_made_again_and_loses_no_node(url: str) -> None:
    store = open_store(url)
    run = _new_run(store)
    root = store.run(run).root_id
    for i in range(3):
        store.add_child(
            run, root, Kind.large, code=f"k{i}", code_hash=f"h{i}", context_ids=[], task_id="t",
            evaluation=_evaluation(1.0 + i), reward=0.1,
        )  # fmt: skip
    pid = store._db.connection.info.backend_pid
    with _admin(url) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0]
    assert len(store.nodes(run)) == 4  # a read meets the ended connection and is read again on a new one
    assert store._db.connection.info.backend_pid != pid
    with _admin(url) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (store._db.connection.info.backend_pid,))
    store.add_child(
        run, root, Kind.large, code="k3", code_hash="h3", context_ids=[], task_id="t",
        evaluation=_evaluation(4.0), reward=0.1,
    )  # fmt: skip  # a write's BEGIN meets it, and the write goes through on a new one
    assert store.run(run).steps == 4 and store.node(root).visits == 4
    store.close()
