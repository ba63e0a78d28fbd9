"""The resources: what the tools' answers point at when they leave a long text out (a task's source, a node's
kernel and its whole evaluation, a run's tree, the skill memory as a prompt block)."""

from __future__ import annotations

from collections.abc import Callable

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError

from adaexplore import tools
from adaexplore.errors import AdaexploreError, NotFoundError
from adaexplore.server._calls import services

__all__ = ["register_resources"]


def _resolved(function: Callable[[], str]) -> str:
    # An id that names nothing is the -32602 "not found" answer; any other refusal keeps its message too.
    try:
        return function()
    except NotFoundError as exc:
        raise ResourceNotFoundError(str(exc)) from exc
    except AdaexploreError as exc:
        raise ResourceError(str(exc)) from exc


def _node_number(node_id: str, what: str) -> int:
    try:
        return int(node_id)
    except ValueError:
        raise ResourceNotFoundError(
            f"node://{node_id}/{what} names no node: a node id is a whole number (compile_and_profile and "
            f"get_run give them), as in node://12/{what}"
        ) from None


def register_resources(mcp: MCPServer) -> None:
    @mcp.resource("task://{task_id}", mime_type="text/x-python", description="a task's source")
    def task_source(task_id: str, ctx: Context) -> str:
        # as the step instructions show it: a FlashInfer-Bench workload's encoded input tensors are elided
        return _resolved(lambda: tools.task_view(services(ctx), task_id))

    @mcp.resource("node://{node_id}/code", mime_type="text/x-python", description="a node's kernel")
    def node_code(node_id: str, ctx: Context) -> str:
        number = _node_number(node_id, "code")
        return _resolved(lambda: tools.node_code(services(ctx), number))

    @mcp.resource(
        "node://{node_id}/evaluation", mime_type="application/json", description="a node's whole evaluation, untrimmed"
    )
    def node_evaluation(node_id: str, ctx: Context) -> str:
        number = _node_number(node_id, "evaluation")
        return _resolved(lambda: tools.node_evaluation_json(services(ctx), number))

    @mcp.resource("run://{run_id}/tree", mime_type="text/plain", description="a run as an indented tree")
    def run_tree(run_id: str, ctx: Context) -> str:
        return _resolved(lambda: tools.render_run_tree(services(ctx), run_id))

    @mcp.resource(
        "run://{run_id}/brief",
        mime_type="text/markdown",
        description="what every step of a run shares: the task, its tolerance, the rules and the skill memory",
    )
    def run_brief(run_id: str, ctx: Context) -> str:
        return _resolved(lambda: tools.run_brief_text(services(ctx), run_id))

    @mcp.resource(
        "memory://{scope}",
        mime_type="text/plain",
        description="the skill memory as a prompt block; scope: 'current' (the running Triton) or a version",
    )
    def memory_rules(scope: str, ctx: Context) -> str:
        if not scope.strip():
            raise ResourceNotFoundError(
                "memory:// needs a scope: memory://current (the running Triton) or a version, as in memory://3.6.0"
            )
        request = tools.GetSkillMemoryRequest(triton=None if scope == "current" else scope)
        return _resolved(lambda: tools.get_skill_memory(services(ctx), request).prompt or "")
