"""The MCP server class: the SDK's, listing lean schemas and refusing in our words what the SDK would take
silently (an argument no tool takes, one of the wrong type) or answer with a bare "Internal server error" (a
prompt or a prompt argument we do not have)."""

from __future__ import annotations

from typing import Any

from mcp import MCPError
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import INVALID_PARAMS, CallToolResult, GetPromptResult, InputRequiredResult
from mcp.types import Tool as MCPTool
from pydantic import ValidationError

from adaexplore.server._arguments import check_arguments, explain_validation, our_message, shown
from adaexplore.server._schema import compact_input, compact_output, one_line

__all__ = ["StrictServer"]


class StrictServer(MCPServer):
    """An MCP server whose tools and prompts refuse arguments they do not take: a misspelt name would otherwise
    be dropped without a word, and the call would do something other than what was asked."""

    _schemas: dict[str, dict[str, Any]] | None = None  # each tool's input schema, as clients see it

    async def list_tools(self) -> list[MCPTool]:
        listed = await super().list_tools()
        for tool in listed:
            tool.input_schema = {**compact_input(tool.input_schema), "additionalProperties": False}
            tool.output_schema = compact_output(tool.output_schema)
            tool.description = one_line(tool.description)
        return listed

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> CallToolResult | InputRequiredResult:
        schemas = self._schemas
        if schemas is None:  # the tools are all registered before the first call, and never change after
            schemas = self._schemas = {t.name: t.input_schema for t in await self.list_tools()}
        if name not in schemas:
            raise ToolError(f"there is no tool {shown(name)}; the tools are {', '.join(sorted(schemas))}")
        # A misspelt argument would otherwise be dropped without a word, and the SDK would convert what it
        # can (true to 1): both are refused here, so that a call does only what it says.
        try:
            checked = check_arguments(name, arguments, schemas[name])
        except ValueError as exc:
            raise ToolError(our_message(name, str(exc), arguments)) from None
        try:
            return await super().call_tool(name, checked, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(explain_validation(name, exc.__cause__, arguments, schemas[name])) from exc.__cause__
            raise ToolError(our_message(name, str(exc), arguments)) from exc

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context | None = None
    ) -> GetPromptResult | InputRequiredResult:
        """A prompt asked for by a name we do not have, or with arguments missing or unknown, is refused with a
        message that names them: the SDK answers those with a bare "Internal server error"."""
        prompts = {prompt.name: prompt for prompt in await self.list_prompts()}
        if name not in prompts:
            raise MCPError(INVALID_PARAMS, f"there is no prompt {name!r}; the prompts are {', '.join(sorted(prompts))}")
        declared = prompts[name].arguments or []
        given = set(arguments or {})
        missing = sorted(arg.name for arg in declared if arg.required and arg.name not in given)
        unknown = sorted(given - {arg.name for arg in declared})
        if missing or unknown:
            wrong = [
                f"{', '.join(missing)} missing" if missing else "",
                f"{', '.join(unknown)} unknown" if unknown else "",
            ]
            raise MCPError(
                INVALID_PARAMS,
                f"prompt {name} takes {', '.join(arg.name for arg in declared)}: "
                f"{'; '.join(part for part in wrong if part)}",
            )
        return await super().get_prompt(name, arguments, context)
