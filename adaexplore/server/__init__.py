"""The MCP surface: tools, resources and prompts over adaexplore.tools, on stdio or streamable HTTP."""

from adaexplore.server._app import build_server
from adaexplore.server._serve import serve_http, serve_stdio

__all__ = ["build_server", "serve_http", "serve_stdio"]
