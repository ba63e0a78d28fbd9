"""`adaexplore doctor` on this machine, and with an endpoint that is not an OpenAI API."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.postgres import Server


class _Refuses(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(404)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(501)
        self.send_header("content-length", "0")
        self.end_headers()


def doctor(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    return subprocess.run(
        [sys.executable, "-m", "adaexplore", "doctor", "--home", str(home), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_doctor_reports_every_part_of_the_machine(tmp_path: Path) -> None:
    run = doctor(home=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    heads = [line.split()[0] for line in run.stdout.splitlines()[1:-1:2]]
    assert heads == ["gpu", "torch", "backends", "sandbox", "home", "database", "cache", "estimate", "model"]
    verdicts = run.stdout.splitlines()[2:-1:2]
    assert all(v.strip() == "ok" for v in verdicts), run.stdout
    assert "triton" in run.stdout and "compile, interpret" in run.stdout and "Triton cache" in run.stdout
    assert "estimate  adaexplore's own efficiencies for every GPU (no store yet, so no calibration)" in run.stdout
    assert run.stdout.splitlines()[-1] == "9 ok"


def test_doctor_checks_the_endpoint_with_a_real_request(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refuses)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        run = doctor("--base-url", url, "--model", "m", home=tmp_path)
    finally:
        server.shutdown()
        server.server_close()
    assert run.returncode == 1, run.stdout + run.stderr
    assert "to do: the endpoint at" in run.stdout and "not an OpenAI-compatible chat API" in run.stdout
    assert "check --base-url" in run.stdout and run.stdout.splitlines()[-1] == "8 ok; to do: model"


def _doctor_env(home: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ADAEXPLORE_DB")}
    return subprocess.run(
        [sys.executable, "-m", "adaexplore", "doctor", "--home", str(home), *args],
        capture_output=True,
        text=True,
        env={**base, **env},
        timeout=300,
    )


def _line(output: str, what: str) -> tuple[str, str]:
    """The doctor's line for `what`: what it found, and its verdict."""
    lines = output.splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[:1] == [what])
    return lines[at], lines[at + 1].strip()


@pytest.mark.slow
def test_doctor_connects_to_a_postgresql_store_and_shows_the_servers_refusal(
    tmp_path: Path, postgres_server: Server
) -> None:
    import psycopg

    url = postgres_server.new_database()
    role = "adaexplore_doctor_test"
    with psycopg.connect(postgres_server.url, autocommit=True) as admin:
        admin.execute(f"DROP ROLE IF EXISTS {role}")
        admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'right-one'")
    try:
        parts = urlsplit(url)
        wrong = parts._replace(netloc=f"{role}:hunter2@{parts.netloc.rpartition('@')[2]}").geturl()
        refused = _doctor_env(tmp_path, env={"ADAEXPLORE_DB": wrong})
        reached = _doctor_env(tmp_path, env={"ADAEXPLORE_DB": url})
    finally:
        with psycopg.connect(postgres_server.url, autocommit=True) as admin:
            admin.execute(f"DROP ROLE {role}")
        postgres_server.drop_database(url)
    found, verdict = _line(reached.stdout, "database")
    assert verdict == "ok" and "PostgreSQL " in found and "no adaexplore store yet" in found, reached.stdout
    if "password authentication failed" not in refused.stdout:
        pytest.skip("this test server lets every local user in without a password (ADAEXPLORE_TEST_POSTGRES)")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    found, verdict = _line(refused.stdout, "database")
    assert "(from ADAEXPLORE_DB)" in found and verdict.startswith("to do: cannot connect to PostgreSQL at ")
    assert f'password authentication failed for user "{role}"' in verdict and "fix ADAEXPLORE_DB" in verdict
    assert "hunter2" not in refused.stdout + refused.stderr
    assert refused.stdout.splitlines()[-1].endswith("to do: database")


@pytest.mark.slow
def test_doctor_asks_the_cluster_for_its_adaexplore_workers(tmp_path: Path) -> None:
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, protocol="tcp", dashboard_address=":0"
    ) as plain:  # on TCP: the doctor asks from a process of its own
        asked = _doctor_env(tmp_path, "--cluster", plain.scheduler_address, env={})
    assert asked.returncode == 1, asked.stdout + asked.stderr
    found, verdict = _line(asked.stdout, "cluster")
    assert f"Dask scheduler {plain.scheduler_address}: 0 adaexplore worker(s) with 0 GPU(s), 1 without" in found
    assert (
        verdict.startswith("to do: start a worker on each GPU host with `")
        and "--preload adaexplore.cluster" in verdict
    )
    assert asked.stdout.splitlines()[-1].endswith("to do: cluster")


async def _unanswered(address: str) -> str:
    from adaexplore.config import ExecutorConfig, Settings
    from adaexplore.errors import ConfigError
    from adaexplore.tools import probe_cluster

    settings = Settings(executor=ExecutorConfig(cluster=address, cluster_timeout_s=1))
    try:
        await probe_cluster(settings)
    except ConfigError as exc:  # a setting that does not answer: exit code 2, as a database URL
        return str(exc)
    raise AssertionError("a scheduler that is not there answered")


def test_a_scheduler_that_does_not_answer_is_a_setting_to_fix() -> None:
    import anyio

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{s.getsockname()[1]}"
    message = anyio.run(_unanswered, address)
    assert message.startswith(f"the Dask cluster at {address} did not answer within 1 s"), message
    assert "not a Dask scheduler address" in anyio.run(_unanswered, "nowhere")
