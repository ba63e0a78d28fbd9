"""The report pages over HTTP, read-only: `/runs/RUN` and `/benches/BENCH`, beside `/mcp` on the same server.

The SDK guards only its own `/mcp` route, so these routes apply the same two rules themselves: the
DNS-rebinding guard of the bind (Host and Origin), and, where the server has a token, the bearer token (the
SDK's authentication middleware runs for every route; what it found is checked here).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio.to_thread
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response

from adaexplore import tools
from adaexplore.errors import NotFoundError

__all__ = ["REFRESH_S", "add_report_routes"]

REFRESH_S = 5  # a page of a run or bench that is still running reloads this often
_CHALLENGE = 'Bearer error="invalid_token", error_description="Authentication required"'  # as for /mcp


def add_report_routes(
    mcp: MCPServer,
    services: Callable[[], tools.Services | None],
    *,
    guard: TransportSecuritySettings | None,
    scopes: list[str] | None,
) -> None:
    """Serve the pages of runs and benches from `services()` (None while the server starts). `guard`: the
    Host/Origin rules of `/mcp` (None: none); `scopes`: the token's scopes a request must carry (None: the
    server has no token)."""
    security = TransportSecurityMiddleware(guard)

    async def refused(request: Request) -> Response | None:
        answer = await security.validate_request(request, is_post=False)
        if answer is not None:
            return answer
        if scopes is None:
            return None
        user = request.scope.get("user")
        if not isinstance(user, AuthenticatedUser) or not set(scopes) <= set(user.scopes):
            return JSONResponse(
                {"error": "invalid_token", "error_description": "Authentication required"},
                status_code=401,
                headers={"WWW-Authenticate": _CHALLENGE},
            )
        return None

    async def page(
        request: Request,
        read: Callable[[tools.Services, str], dict[str, Any]],
        render: Callable[..., str],
        key: str,
    ) -> Response:
        answer = await refused(request)
        if answer is not None:
            return answer
        opened = services()
        if opened is None:
            return PlainTextResponse("the server is still starting; try again in a moment", status_code=503)
        try:
            # read here, on the event loop, where every other use of the store's connection is
            data = read(opened, request.path_params[key])
        except NotFoundError as exc:
            return PlainTextResponse(str(exc), status_code=404)
        html = await anyio.to_thread.run_sync(lambda: render(data, refresh_every=REFRESH_S))
        return HTMLResponse(html, headers={"Cache-Control": "no-store"})

    # The report's modules (and rich and the HTML templates behind them) load with the first page asked for,
    # not before the server answers `initialize`.
    @mcp.custom_route("/runs/{run_id}", methods=["GET"])
    async def run_page(request: Request) -> Response:
        from adaexplore.bench._report_data import run_page_data
        from adaexplore.bench._report_html import render_run_html

        return await page(request, run_page_data, render_run_html, "run_id")

    @mcp.custom_route("/benches/{bench_id}", methods=["GET"])
    async def bench_page(request: Request) -> Response:
        from adaexplore.bench._report_data import bench_page_data
        from adaexplore.bench._report_html import render_bench_html

        return await page(request, bench_page_data, render_bench_html, "bench_id")
