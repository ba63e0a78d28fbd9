"""Running the server: stdio for an MCP host, or streamable HTTP on loopback (or, with a token, elsewhere)."""

from __future__ import annotations

import ipaddress
import os
import secrets
import socket
import sys

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

from adaexplore.config import Settings
from adaexplore.errors import ConfigError
from adaexplore.server._app import build_server

__all__ = ["client_url", "is_loopback", "loopback_guard", "serve_http", "serve_stdio"]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def loopback_guard(host: str, port: int) -> TransportSecuritySettings:
    """The DNS-rebinding guard for a loopback bind: requests must name this address and port in `Host`, and a
    browser's `Origin` must be this same server. The SDK turns a guard on by itself only for the exact strings
    127.0.0.1, localhost and ::1, so any other loopback address (127.0.0.2, 0:0:0:0:0:0:0:1, …) would
    otherwise listen unguarded. Port 0 (a free port chosen at bind time) accepts any port."""
    if host == "localhost":
        names = {"localhost", "127.0.0.1", "[::1]"}
    else:
        address = ipaddress.ip_address(host)
        names = {f"[{host}]", f"[{address.compressed}]"} if address.version == 6 else {host, address.compressed}
        names.add("localhost")
    at = str(port) if port else "*"
    hosts = [f"{name}:{at}" for name in sorted(names)]
    origins = [f"http://{name}:{at}" for name in sorted(names)]
    if port == 80:  # clients leave the default port out of both headers
        hosts += sorted(names)
        origins += [f"http://{name}" for name in sorted(names)]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


def serve_stdio(settings: Settings) -> None:
    anyio.run(_run_stdio, build_server(settings))


async def _run_stdio(server: MCPServer) -> None:
    """stdio as the SDK serves it, except that a line that is not a JSON-RPC message gets an answer: the SDK
    drops it without a word, and the client waits for a reply that never comes."""
    async with stdio_server() as (read_stream, write_stream):
        incoming_send, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def sort_lines() -> None:
            async with incoming_send, read_stream:
                async for item in read_stream:
                    if isinstance(item, Exception):
                        await write_stream.send(SessionMessage(refusal_of(item)))
                    else:
                        await incoming_send.send(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(sort_lines)
            lowlevel = server._lowlevel_server  # the SDK's own run_stdio_async serves this same object
            await lowlevel.run(incoming, write_stream, lowlevel.create_initialization_options())
            tg.cancel_scope.cancel()


def refusal_of(problem: Exception) -> JSONRPCError:
    """The JSON-RPC error for a line the SDK could not read: -32700 when it is not JSON, -32600 when it is JSON
    but no JSON-RPC message. Its id cannot be trusted, so the answer's is null. The same words go to stderr."""
    if isinstance(problem, ValidationError):
        kinds = {error["type"] for error in problem.errors(include_url=False, include_input=False)}
        not_json = "json_invalid" in kinds
    else:
        not_json = True
    if not_json:
        code, message = (
            PARSE_ERROR,
            ("Parse error: the line is not JSON; send each JSON-RPC message as one JSON object on one line"),
        )
    else:
        code, message = (
            INVALID_REQUEST,
            (
                'Invalid request: the line is JSON but not a JSON-RPC 2.0 message; send {"jsonrpc": "2.0", "id": …, '
                '"method": …, "params": {…}}'
            ),
        )
    print(f"adaexplore: answered a stdin line with error {code}: {message}", file=sys.stderr, flush=True)
    return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=code, message=message))


def _check_bindable(host: str, port: int) -> None:
    """Say plainly that the address is taken (or not this machine's) before the server starts."""
    address = "127.0.0.1" if host == "localhost" else host
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server's own socket does
        try:
            probe.bind((address, port))
        except OSError as exc:
            raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def client_url(host: str, port: int) -> str:
    """The URL a client gives to reach a server listening on host:port. An address that stands for every
    interface (0.0.0.0, ::) is no address to connect to: the URL names this machine by its host name instead."""
    name, note = host, ""
    if host != "localhost" and ipaddress.ip_address(host).is_unspecified:
        name = socket.gethostname()
        note = f" (or this machine's address instead of {name}; {host} listens on all of them)"
    shown = f"[{name}]" if ":" in name else name
    at = str(port) if port else "PORT"
    picked = " (PORT: the free port picked)" if not port else ""
    return f"http://{shown}:{at}/mcp{picked}{note}"


def serve_http(settings: Settings, host: str, port: int) -> None:
    """Streamable HTTP. On any loopback address a DNS-rebinding guard checks Host and Origin (see
    `loopback_guard`), and a token is optional (ADAEXPLORE_TOKEN). On any other address a bearer token is
    required: ADAEXPLORE_TOKEN, or one generated here and printed to stderr. The report pages of runs and
    benches (`/runs/RUN`, `/benches/BENCH`) are served under the same guard and token as `/mcp`.

    Raises:
        ConfigError: the host is not an address this machine can bind.
    """
    token = os.environ.get("ADAEXPLORE_TOKEN") or None
    guard: TransportSecuritySettings | None = None
    if is_loopback(host):
        guard = loopback_guard(host, port)
    else:
        try:
            ipaddress.ip_address(host)
        except ValueError as exc:
            raise ConfigError(f"--host must be an IP address (or localhost), not {host!r}") from exc
        if token is None:
            token = secrets.token_urlsafe(24)
            print(
                f"adaexplore: listening on {host}:{port}, which is not loopback, so every request needs "
                f"'Authorization: Bearer {token}' (set ADAEXPLORE_TOKEN to choose the token)",
                file=sys.stderr,
                flush=True,
            )
    _check_bindable(host, port)
    where = client_url(host, port)
    if token is None:
        header = ""
    elif os.environ.get("ADAEXPLORE_TOKEN"):
        header = "; send the header 'Authorization: Bearer <the ADAEXPLORE_TOKEN you set>'"
    else:
        header = f"; send the header 'Authorization: Bearer {token}'"
    print(f"adaexplore: MCP server: give your client the URL {where}{header}", file=sys.stderr, flush=True)
    # Off loopback the Host a client uses can be any name of this machine, so there is no guard: the token is
    # what keeps others out (a rebinding browser cannot present it).
    server = build_server(settings, token=token, transport_security=guard)
    anyio.run(lambda: server.run_streamable_http_async(host=host, port=port, transport_security=guard))
