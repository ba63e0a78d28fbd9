"""A scriptable OpenAI-compatible HTTP server on 127.0.0.1, for tests of the model client.

Chat requests take the next scripted action; once the script is used up, the responder decides; with
neither, the server answers 500 "script exhausted". It serves `POST /v1/chat/completions`,
`GET /v1/models` and `GET /v1/models/{id}`.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

__all__ = ["Action", "Fail", "FakeOpenAI", "Raw", "Responder", "Say", "Slow"]


@dataclass
class Say:
    """A normal chat completion."""

    text: str | None
    finish_reason: str = "stop"
    prompt_tokens: int = 100
    completion_tokens: int = 50


@dataclass
class Fail:
    """An HTTP error with an OpenAI-style JSON error body."""

    status: int
    message: str = "error"
    code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Raw:
    """Any body, for malformed replies."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"


@dataclass
class Slow:
    """Wait this long, then answer with `then` (to make the client time out)."""

    seconds: float
    then: Action


Action = Say | Fail | Raw | Slow
Responder = Callable[[dict[str, Any]], Action]
# Which model routes the server has: "all" (like OpenAI), "list" (only GET /models, like vLLM), "none".
ModelRoutes = Literal["all", "list", "none"]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # stop() must not wait for a handler sleeping in a Slow action
    fake: FakeOpenAI


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # -- routes --------------------------------------------------------------------------------------

    def do_GET(self) -> None:
        fake = self.server.fake
        path = self.path.split("?", 1)[0]
        if not self._authorized():
            return
        if path == "/v1/models" and fake.model_routes in ("all", "list"):
            data = [_model_object(name) for name in fake.models]
            self._send_json(200, {"object": "list", "data": data})
        elif path.startswith("/v1/models/") and fake.model_routes == "all":
            name = path[len("/v1/models/") :]
            if name in fake.models:
                self._send_json(200, _model_object(name))
            else:
                self._send_error(Fail(404, f"The model '{name}' does not exist", code="model_not_found"))
        else:
            self._send_json(404, {"detail": "Not Found"})

    def do_POST(self) -> None:
        fake = self.server.fake
        path = self.path.split("?", 1)[0]
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if path != "/v1/chat/completions":
            self._send_json(404, {"detail": "Not Found"})
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._send_error(Fail(400, "the request body is not JSON", code="invalid_json"))
            return
        fake._record(body)
        if not self._authorized():
            return
        model = body.get("model")
        if model not in fake.models:
            message = f"The model `{model}` does not exist or you do not have access to it."
            self._send_error(Fail(404, message, code="model_not_found"))
            return
        fake._enter()
        try:
            self._perform(fake._next_action(body), str(model))
        finally:
            fake._leave()

    # -- answers -------------------------------------------------------------------------------------

    def _authorized(self) -> bool:
        key = self.server.fake.api_key
        if key is None or self.headers.get("Authorization") == f"Bearer {key}":
            return True
        self._send_error(Fail(401, "Incorrect API key provided.", code="invalid_api_key"))
        return False

    def _perform(self, action: Action, model: str) -> None:
        if isinstance(action, Slow):
            if self.server.fake._stopping.wait(action.seconds):
                return  # the server is stopping; nobody waits for this answer
            self._perform(action.then, model)
        elif isinstance(action, Say):
            self._send_json(200, self.server.fake._completion(action, model))
        elif isinstance(action, Fail):
            self._send_error(action)
        else:
            self._send(action.status, action.body, action.content_type, {})

    def _send_error(self, fail: Fail) -> None:
        error = {"message": fail.message, "type": _error_type(fail.status), "param": None, "code": fail.code}
        self._send_json(fail.status, {"error": error}, fail.headers)

    def _send_json(self, status: int, payload: object, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json", headers or {})

    def _send(self, status: int, body: bytes, content_type: str, headers: dict[str, str]) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass  # the client gave up (a timeout) and closed the connection


def _error_type(status: int) -> str:
    if status == 401:
        return "authentication_error"
    if status == 429:
        return "rate_limit_error"
    if status >= 500:
        return "server_error"
    return "invalid_request_error"


def _model_object(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 1700000000, "owned_by": "fake"}


class FakeOpenAI:
    """The server; use it as a context manager (`with FakeOpenAI([...]) as fake:`)."""

    def __init__(
        self,
        script: Iterable[Action] = (),
        *,
        responder: Responder | None = None,
        models: Iterable[str] = ("fake-model",),
        api_key: str | None = None,
        model_routes: ModelRoutes = "all",
    ) -> None:
        self.models = tuple(models)
        self.api_key = api_key
        self.model_routes: ModelRoutes = model_routes
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self.max_in_flight = 0
        self._script: deque[Action] = deque(script)
        self._in_flight = 0
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.base_url = ""

    def push(self, *actions: Action) -> None:
        """Append actions to the script."""
        with self._lock:
            self._script.extend(actions)

    @property
    def in_flight(self) -> int:
        """Chat requests being answered now."""
        return self._in_flight

    def __enter__(self) -> FakeOpenAI:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        self._server = server
        self.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # -- used by the handler -------------------------------------------------------------------------

    def _record(self, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(body)

    def _next_action(self, body: dict[str, Any]) -> Action:
        with self._lock:
            if self._script:
                return self._script.popleft()
        if self.responder is not None:
            return self.responder(body)
        return Fail(500, "script exhausted", code="script_exhausted")

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _completion(self, say: Say, model: str) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-fake{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": say.text, "refusal": None},
                    "logprobs": None,
                    "finish_reason": say.finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": say.prompt_tokens,
                "completion_tokens": say.completion_tokens,
                "total_tokens": say.prompt_tokens + say.completion_tokens,
            },
        }
