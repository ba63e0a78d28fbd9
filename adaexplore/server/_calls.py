"""Calling a tool of tools/ from an MCP handler: the lifespan's services, a refusal of ours as a tool error in
our words, and a result as structured content with a one-line summary beside it."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from adaexplore import tools
from adaexplore.errors import AdaexploreError, EvaluatorError
from adaexplore.server._trim import trim

__all__ = ["acall", "answer", "call", "evaluation_resources", "lean_verdict", "services"]

Model = TypeVar("Model", bound=BaseModel)


def services(ctx: Context) -> tools.Services:
    # the server's lifespan gives the services; a bare `Context` types its lifespan context as the SDK's default dict
    return cast(tools.Services, ctx.request_context.lifespan_context)


def answer(result: BaseModel | dict[str, Any], summary: str, resources: dict[str, str] | None = None) -> CallToolResult:
    """`result` as structured content, its long texts trimmed to point at `resources` (field → URI)."""
    data = result if isinstance(result, dict) else json.loads(result.model_dump_json())
    return CallToolResult(
        content=[TextContent(type="text", text=summary)], structured_content=trim(data, resources or {})
    )


def lean_verdict(result: BaseModel) -> dict[str, Any]:
    """A result whose `message` is a verdict, with that verdict once: in its evaluation the same message, the
    estimate's summary and the warnings' texts that the verdict holds are left empty (each flag keeps its code and
    severity). The whole evaluation is the node's `node://N/evaluation`."""
    data: dict[str, Any] = json.loads(result.model_dump_json())
    said = str(data.get("message") or "")
    evaluation = data.get("evaluation")
    if not said or not isinstance(evaluation, dict):
        return data
    if evaluation.get("message") and evaluation["message"] in said:  # `message` may add a note to it
        evaluation["message"] = ""
    estimate = evaluation.get("estimate")
    if isinstance(estimate, dict) and estimate.get("summary") and estimate["summary"] in said:
        estimate["summary"] = ""
    for flag in (evaluation.get("audit") or {}).get("flags") or []:
        if isinstance(flag, dict) and flag.get("message") and flag["message"] in said:
            flag["message"] = ""
    return data


def call(function: Callable[[], Model]) -> Model:
    try:
        return function()
    except AdaexploreError as exc:
        raise ToolError(str(exc)) from exc


async def acall(function: Callable[[], Awaitable[Model]]) -> Model:
    try:
        return await function()
    except EvaluatorError as exc:
        raise ToolError(f"the evaluator failed (not your kernel): {exc}; try again") from exc
    except AdaexploreError as exc:
        raise ToolError(str(exc)) from exc


def evaluation_resources(prefix: str, node_id: int | None) -> dict[str, str]:
    """Where the parts of a node's evaluation that an answer trims can be read whole."""
    if node_id is None:
        return {}
    return {
        f"{prefix}error.traceback": f"node://{node_id}/evaluation",
        f"{prefix}output": f"node://{node_id}/evaluation",
    }
