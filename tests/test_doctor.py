"""`adaexplore doctor` on this machine, and with an endpoint that is not an OpenAI API."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


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
    assert heads == ["gpu", "torch", "backends", "sandbox", "home", "database", "cache", "model"]
    verdicts = run.stdout.splitlines()[2:-1:2]
    assert all(v.strip() == "ok" for v in verdicts), run.stdout
    assert "triton" in run.stdout and "compile, interpret" in run.stdout and "Triton cache" in run.stdout
    assert run.stdout.splitlines()[-1] == "8 ok"


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
    assert "check --base-url" in run.stdout and run.stdout.splitlines()[-1] == "7 ok; to do: model"
