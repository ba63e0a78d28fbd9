"""The report pages served by the real `adaexplore serve --http` on 127.0.0.1, beside /mcp and under its rules:
the DNS-rebinding guard of the bind, and the bearer token where there is one."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from adaexplore.config import SearchConfig, Settings
from adaexplore.domain import Kind
from adaexplore.executor import Status, code_hash, task_from_source
from adaexplore.search import reward
from adaexplore.store import NewEvaluation, open_store
from tests.conftest import EXAMPLES, ROOT
from tests.fakes import make_evaluation

TASK = (EXAMPLES / "tasks" / "row_softmax.py").read_text()
KERNEL = (EXAMPLES / "kernels" / "row_softmax" / "correct.py").read_text()
TOKEN = "pages-s3cret"
REFRESH = '<meta http-equiv="refresh" content="5">'


def make_runs(home: Path) -> tuple[str, str]:
    """Two runs of one evaluated step each: one still running, one finished."""
    store = open_store(Settings(home=home).database_url)
    try:
        task = task_from_source(TASK)
        store.put_task(task.hash, "row_softmax", TASK, "test")
        ids = []
        for _ in range(2):
            run = store.create_run(
                task.hash, config=SearchConfig().model_dump_json(), mode="strict", backend="cuda", model="t", seed=0
            )
            evaluation = make_evaluation(task, KERNEL, Status.ok, 1.7)
            store.add_child(
                run.id,
                run.root_id,
                Kind.large,
                code=KERNEL,
                code_hash=code_hash(KERNEL),
                context_ids=[],
                task_id=task.hash,
                evaluation=NewEvaluation(
                    code_hash=code_hash(KERNEL),
                    environment="test",
                    mode="strict",
                    status="ok",
                    speedup=1.7,
                    result=evaluation.model_dump_json(),
                ),
                reward=reward("ok", 1.7),
            )
            ids.append(run.id)
        store.finish_run(ids[1], None, "[]")
    finally:
        store.close()
    return ids[0], ids[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(home: Path, token: str | None) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("ADAEXPLORE_TOKEN", "ADAEXPLORE_DB")}
    env["ADAEXPLORE_HOME"] = str(home)
    if token:
        env["ADAEXPLORE_TOKEN"] = token
    log = (home / f"server-{port}.log").open("wb")
    command = [sys.executable, "-m", "adaexplore", "serve", "--http", "--port", str(port)]
    return subprocess.Popen(command, env=env, cwd=ROOT, stdout=log, stderr=log), port


def wait_until_listening(process: subprocess.Popen[bytes], port: int, home: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"the HTTP server did not start: {(home / f'server-{port}.log').read_text()[-3000:]}")


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    """One server without a token and one with, both on 127.0.0.1 over the same store (started together)."""
    home = tmp_path_factory.mktemp("pages")
    running, finished = make_runs(home)
    started = {"open": start(home, None), "token": start(home, TOKEN)}
    try:
        for process, port in started.values():
            wait_until_listening(process, port, home)
        yield {
            "open": started["open"][1],
            "token": started["token"][1],
            "running": running,
            "finished": finished,
        }
    finally:
        for process, _ in started.values():
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def http() -> Iterator[httpx2.Client]:
    with httpx2.Client(timeout=30) as client:
        yield client


def get(http: httpx2.Client, port: int, path: str, headers: dict[str, str] | None = None) -> httpx2.Response:
    return http.get(f"http://127.0.0.1:{port}{path}", headers=headers or {})


def test_the_run_page_is_served_and_reloads_itself_while_the_run_is_running(servers: dict, http: httpx2.Client) -> None:
    page = get(http, servers["open"], f"/runs/{servers['running']}")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert len(re.findall(r'<g class="node[^"]*" data-node-id="\d+"', page.text)) == 2  # the root, its child
    assert REFRESH in page.text
    finished = get(http, servers["open"], f"/runs/{servers['finished']}")
    assert finished.status_code == 200 and REFRESH not in finished.text


def test_an_unknown_id_is_a_404_that_names_the_list_command(servers: dict, http: httpx2.Client) -> None:
    missing = get(http, servers["open"], "/runs/run-00000000")
    assert missing.status_code == 404
    assert missing.text == "no run has id 'run-00000000'; start_run returns the ids (`adaexplore runs list`)"
    bench = get(http, servers["open"], "/benches/bench-00000000")
    assert bench.status_code == 404 and "`adaexplore bench list`" in bench.text


def test_a_foreign_host_or_origin_is_refused(servers: dict, http: httpx2.Client) -> None:
    port, path = servers["open"], f"/runs/{servers['running']}"
    assert get(http, port, path, {"Host": "evil.example.com"}).status_code == 421
    assert get(http, port, path, {"Host": f"evil.example.com:{port}"}).status_code == 421
    assert get(http, port, path, {"Origin": f"http://evil.example.com:{port}"}).status_code == 403
    assert get(http, port, path, {"Host": f"localhost:{port}", "Origin": f"http://127.0.0.1:{port}"}).status_code == 200


def test_with_a_token_a_page_needs_it(servers: dict, http: httpx2.Client) -> None:
    port, path = servers["token"], f"/runs/{servers['running']}"
    refused = get(http, port, path)
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"].startswith('Bearer error="invalid_token"')
    assert get(http, port, path, {"Authorization": "Bearer wrong"}).status_code == 401
    assert get(http, port, "/runs/run-00000000").status_code == 401  # not even whether an id exists
    allowed = get(http, port, path, {"Authorization": f"Bearer {TOKEN}"})
    assert allowed.status_code == 200 and REFRESH in allowed.text
    foreign = {"Authorization": f"Bearer {TOKEN}", "Host": "evil.example.com"}
    assert get(http, port, path, foreign).status_code == 421
