"""The DNS-rebinding guard of a loopback bind, checked by the SDK's own validation of Host and Origin (the
real servers, on 127.0.0.1 and 127.0.0.2, are in test_end_to_end.py)."""

from __future__ import annotations

import pytest
from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.requests import Request

from adaexplore.server._serve import client_url, is_loopback, loopback_guard

pytestmark = pytest.mark.anyio


async def status(host: str, port: int, headers: dict[str, str]) -> int:
    """What the guard of a server bound to host:port answers a POST with these headers (200: let through)."""
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [
            (k.lower().encode(), v.encode()) for k, v in {"content-type": "application/json", **headers}.items()
        ],
    }
    refused = await TransportSecurityMiddleware(loopback_guard(host, port)).validate_request(Request(scope), True)
    return 200 if refused is None else refused.status_code


@pytest.mark.parametrize(
    ("host", "as_named"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("127.0.0.2", "127.0.0.2"),
        ("127.1.2.3", "127.1.2.3"),
        ("::1", "[::1]"),
        ("0:0:0:0:0:0:0:1", "[::1]"),
        ("0:0:0:0:0:0:0:1", "[0:0:0:0:0:0:0:1]"),
        ("localhost", "localhost"),
        ("localhost", "127.0.0.1"),
    ],
)
async def test_every_loopback_bind_lets_its_own_name_through_and_nothing_else(host: str, as_named: str) -> None:
    assert is_loopback(host)
    assert await status(host, 8765, {"host": f"{as_named}:8765"}) == 200
    assert await status(host, 8765, {"host": f"{as_named}:8765", "origin": f"http://{as_named}:8765"}) == 200
    assert await status(host, 8765, {"host": "evil.example.com:8765"}) == 421
    assert await status(host, 8765, {"host": f"{as_named}:9999"}) == 421
    assert await status(host, 8765, {"host": f"{as_named}:8765", "origin": "http://evil.example.com:8765"}) == 403


def test_the_url_given_to_clients_names_an_address_they_can_reach(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("socket.gethostname", lambda: "gpu-box")
    assert client_url("127.0.0.1", 8765) == "http://127.0.0.1:8765/mcp"
    assert client_url("::1", 8765) == "http://[::1]:8765/mcp"
    assert client_url("10.1.2.3", 80) == "http://10.1.2.3:80/mcp"
    for everywhere in ("0.0.0.0", "::"):
        assert client_url(everywhere, 8765) == (
            f"http://gpu-box:8765/mcp (or this machine's address instead of gpu-box; {everywhere} listens on all "
            "of them)"
        )
    assert client_url("0.0.0.0", 0).startswith("http://gpu-box:PORT/mcp (PORT: the free port picked)")


async def test_a_free_port_chosen_at_bind_time_and_the_default_http_port() -> None:
    assert await status("127.0.0.2", 0, {"host": "127.0.0.2:41234"}) == 200
    assert await status("127.0.0.2", 0, {"host": "evil.example.com:41234"}) == 421
    assert await status("127.0.0.2", 80, {"host": "127.0.0.2", "origin": "http://127.0.0.2"}) == 200
    assert await status("127.0.0.2", 80, {"host": "evil.example.com"}) == 421
