"""The MCP server: the tools, resources and prompts over tools/, and nothing more.

Every tool takes flat, typed parameters and returns structured output with a short text summary. A
kernel that fails is a normal result with its status; a call that cannot be answered (an unknown id, a
bad argument) is a tool error whose message says how to fix it. The server never exits on a bad call.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

from adaexplore import __version__, tools
from adaexplore.config import Settings
from adaexplore.server._auth import SCOPES, token_auth
from adaexplore.server._pages import add_report_routes
from adaexplore.server._prompts import register_prompts
from adaexplore.server._resources import register_resources
from adaexplore.server._strict import StrictServer
from adaexplore.server._tools import register_tools

__all__ = ["INSTRUCTIONS", "build_server", "open_in_background"]

INSTRUCTIONS = (
    "adaexplore runs the AdaExplore search for fast, correct Triton kernels: you write the kernels, the server "
    "owns the search tree, the skill memory and the GPU. One step: select_uct (which node, small or large step) → "
    "expand_node (the context and instructions) → write a module defining ModelNew → compile_and_profile (with "
    "the expansion_id; the result joins the tree) → if it failed, record_failure with a one-sentence rule "
    "'You cannot …'. Start with create_task and start_run; read get_skill_memory before writing kernels."
)


def open_in_background(settings: Settings) -> contextlib.AbstractAsyncContextManager[tools.Services]:
    """The services a server runs on: the evaluator starts beside it (importing torch and triton takes seconds),
    so that a client's `initialize` and the tools that only read are answered at once."""
    return tools.open_services(settings, background=True)


def build_server(
    settings: Settings,
    *,
    token: str | None = None,
    services: Callable[[Settings], contextlib.AbstractAsyncContextManager[tools.Services]] = open_in_background,
    transport_security: TransportSecuritySettings | None = None,
) -> MCPServer:
    """The adaexplore MCP server. `token`: require this bearer token on HTTP. `services`: what the lifespan
    opens (tests pass services with a scripted evaluator). `transport_security`: the Host/Origin guard that
    HTTP is served with, which the report pages (`/runs/RUN`, `/benches/BENCH`) apply as `/mcp` does."""
    running: list[tools.Services] = []  # the lifespan's services while it is open, for the report pages

    @contextlib.asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[tools.Services]:
        async with services(settings) as opened:
            running.append(opened)
            try:
                yield opened
            finally:
                running.remove(opened)

    mcp = StrictServer(
        "adaexplore", version=__version__, instructions=INSTRUCTIONS, lifespan=lifespan, **token_auth(token)
    )
    register_tools(mcp)
    register_resources(mcp)
    register_prompts(mcp)
    add_report_routes(
        mcp,
        lambda: running[0] if running else None,
        guard=transport_security,
        scopes=SCOPES if token is not None else None,
    )
    return mcp
