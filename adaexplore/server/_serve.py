"""Running the server: stdio for an MCP host, or streamable HTTP on loopback (or, with a token, elsewhere)."""

from __future__ import annotations

import ipaddress
import os
import secrets
import sys

import anyio

from adaexplore.config import Settings
from adaexplore.errors import ConfigError
from adaexplore.server._app import build_server

__all__ = ["is_loopback", "serve_http", "serve_stdio"]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve_stdio(settings: Settings) -> None:
    anyio.run(build_server(settings).run_stdio_async)


def serve_http(settings: Settings, host: str, port: int) -> None:
    """Streamable HTTP. On loopback the SDK's DNS-rebinding guard is on, and a token is optional
    (ADAEXPLORE_TOKEN). On any other address a bearer token is required: ADAEXPLORE_TOKEN, or one generated
    here and printed to stderr.

    Raises:
        ConfigError: the host is not an address this machine can bind.
    """
    token = os.environ.get("ADAEXPLORE_TOKEN") or None
    if not is_loopback(host):
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
    # On loopback the SDK checks Host and Origin against DNS rebinding by itself; elsewhere the token is what
    # keeps others out (a rebinding browser cannot present it).
    server = build_server(settings, token=token)
    anyio.run(lambda: server.run_streamable_http_async(host=host, port=port))
