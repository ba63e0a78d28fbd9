"""The prompts: one small or large step's instructions (what expand_node gives, read without storing an
expansion) and the request to distill a failed node into a "You cannot …" rule."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from mcp import MCPError
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import INTERNAL_ERROR, INVALID_PARAMS

from adaexplore import tools
from adaexplore.errors import AdaexploreError, RequestError, TaskError
from adaexplore.server._calls import services

__all__ = ["register_prompts"]


def register_prompts(mcp: MCPServer) -> None:
    @mcp.prompt(title="One small step", description="the instructions to edit a node's kernel (a small step)")
    def small_step(run_id: str, node_id: str, ctx: Context) -> str:
        return _step_prompt(ctx, run_id, node_id, "small")

    @mcp.prompt(title="One large step", description="the instructions to write a new kernel from the pool")
    def large_step(run_id: str, node_id: str, ctx: Context) -> str:
        return _step_prompt(ctx, run_id, node_id, "large")

    @mcp.prompt(title="Distill a failure", description="turn a failed node into a one-sentence 'You cannot …' rule")
    def distill_failure(node_id: str, ctx: Context) -> str:
        number = _node_number(node_id)
        return _prompt_call(lambda: tools.distill_prompt(services(ctx), number))


def _step_prompt(ctx: Context, run_id: str, node_id: str, action: Literal["small", "large"]) -> str:
    """The step's instructions, read without storing an expansion, and how to hand the kernel back."""
    number = _node_number(node_id)
    request = tools.ExpandNodeRequest(run_id=run_id, node_id=number, action=action)
    instructions = _prompt_call(lambda: tools.step_instructions(services(ctx), request))
    return (
        f"{instructions}\n\nWhen the module is written, evaluate it with the adaexplore tool compile_and_profile "
        f"(code=<the module>, run_id={run_id!r}, parent_id={number}, action={action!r}): it joins run {run_id} "
        f"as a child of node {number}."
    )


def _node_number(node_id: str) -> int:
    try:
        return int(node_id)
    except ValueError:
        raise MCPError(
            INVALID_PARAMS,
            f"node_id must be a node's number (select_uct, compile_and_profile and get_run give them), not {node_id!r}",
        ) from None


def _prompt_call(function: Callable[[], str]) -> str:
    """A prompt's refusal as a JSON-RPC error that carries our message: the SDK turns any other exception
    from a prompt into a bare "Internal server error"."""
    try:
        return function()
    except (RequestError, TaskError) as exc:
        raise MCPError(INVALID_PARAMS, str(exc)) from exc
    except AdaexploreError as exc:
        raise MCPError(INTERNAL_ERROR, str(exc)) from exc
