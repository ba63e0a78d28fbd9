"""The endpoint check before a run: a server that answers HTTP but is not an OpenAI-compatible API is refused,
and the message names where its address came from. The servers here are real HTTP servers on 127.0.0.1."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from adaexplore.agent._client import ModelClient
from adaexplore.config import ModelConfig
from adaexplore.errors import ModelError

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.anyio


class _NotAnApi(BaseHTTPRequestHandler):
    """404 to every GET (no /v1/models), 501 to every POST: a web server, not an OpenAI API."""

    seen: list[str]

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.seen.append(f"GET {self.path}")
        self._answer(404, b"<html>not found</html>", "text/html")

    def do_POST(self) -> None:
        self.seen.append(f"POST {self.path}")
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self._answer(501, b"<html>Unsupported method ('POST')</html>", "text/html")

    def _answer(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _JsonButNotChat(_NotAnApi):
    """404 to GET, and 200 with a JSON object that is not a chat completion to POST."""

    def do_POST(self) -> None:
        self.seen.append(f"POST {self.path}")
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self._answer(200, b'{"status": "ok"}', "application/json")


@contextmanager
def _server(handler: type[_NotAnApi]) -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []
    bound = type("Handler", (handler,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), bound)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("handler", [_NotAnApi, _JsonButNotChat])
async def test_a_server_that_is_not_an_openai_api_is_refused(handler: type[_NotAnApi]) -> None:
    with _server(handler) as (url, seen):
        config = ModelConfig(name="m", base_url=url, backoff_s=0.01).with_base_url_source("--base-url")
        async with ModelClient(config, api_key="k") as client:
            with pytest.raises(ModelError, match=r"not an OpenAI-compatible chat API.*check --base-url") as err:
                await client.check()
    assert url in str(err.value)
    assert "POST /v1/chat/completions" in seen  # the chat route itself was asked
    if handler is _NotAnApi:
        assert "501" in str(err.value) and seen.count("POST /v1/chat/completions") == 1  # 501 is not retried


def _explore(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "adaexplore", "explore", str(ROOT / "examples/tasks/row_softmax.py"), *args],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "ADAEXPLORE_HOME": str(home), "HOME": str(home)},
        timeout=300,
    )


def test_explore_makes_no_run_on_such_a_server_and_names_the_flag_or_the_file(tmp_path: Path) -> None:
    with _server(_NotAnApi) as (url, _):
        by_flag = _explore(["--base-url", url, "--model", "m", "--steps", "1"], tmp_path / "a")
        settings = tmp_path / "settings.toml"
        settings.write_text(f'[model]\nbase_url = "{url}"\nname = "m"\nbackoff_s = 0.01\n')
        by_file = _explore(["--config", str(settings), "--steps", "1"], tmp_path / "b")
    assert by_flag.returncode == 2, by_flag.stderr
    assert "not an OpenAI-compatible chat API" in by_flag.stderr and "check --base-url" in by_flag.stderr
    assert by_file.returncode == 2, by_file.stderr
    assert f"base_url under [model] in the settings file {settings}" in by_file.stderr
    for home in (tmp_path / "a", tmp_path / "b"):  # the check came before any run, or even the database
        assert not (home / "adaexplore.db").exists()
