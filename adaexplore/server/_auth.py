"""The bearer token of the HTTP transport: one static token, given when the server starts (ADAEXPLORE_TOKEN, or
one generated and printed), checked by the SDK on every request."""

from __future__ import annotations

from typing import Any

from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from pydantic import AnyHttpUrl

__all__ = ["SCOPES", "StaticToken", "token_auth"]

SCOPES = ["adaexplore"]


class StaticToken:
    """The SDK's token verifier for one token known in advance."""

    def __init__(self, token: str) -> None:
        self._token = token

    async def verify_token(self, token: str) -> AccessToken | None:
        return AccessToken(token=token, client_id="adaexplore", scopes=list(SCOPES)) if token == self._token else None


def token_auth(token: str | None) -> dict[str, Any]:
    """The server's keyword arguments that require `token` on every request (none without a token)."""
    if token is None:
        return {}
    return {
        "token_verifier": StaticToken(token),
        "auth": AuthSettings(
            issuer_url=AnyHttpUrl("http://127.0.0.1:9/"),
            resource_server_url=None,
            required_scopes=SCOPES,
        ),
    }
