"""A tool's parameters are its request model's fields: what the model says of a field (its description, bounds,
default) is what a client reads, and the server refuses, when it is built, to say any of it a second time."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import pytest
from mcp import Client
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from adaexplore import tools
from adaexplore.config import Settings
from adaexplore.server._requests import takes
from adaexplore.server._schema import one_line
from tests.server.test_lean_answers import server_with

pytestmark = pytest.mark.anyio

REQUESTS: dict[str, type[BaseModel]] = {
    "best_kernel": tools.BestKernelRequest,
    "compile_and_profile": tools.CompileAndProfileRequest,
    "confirm_rule": tools.ConfirmRuleRequest,
    "create_task": tools.CreateTaskRequest,
    "expand_node": tools.ExpandNodeRequest,
    "finish_run": tools.FinishRunRequest,
    "get_node": tools.GetNodeRequest,
    "get_run": tools.GetRunRequest,
    "get_skill_memory": tools.GetSkillMemoryRequest,
    "record_failure": tools.RecordFailureRequest,
    "select_uct": tools.SelectUctRequest,
    "start_run": tools.StartRunRequest,
}


async def test_every_parameter_reads_as_its_request_model_describes_it(tmp_path: Path) -> None:
    async with Client(server_with(Settings(home=tmp_path))) as client:
        listed = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
    assert set(listed) == set(REQUESTS)
    for name, schema in listed.items():
        fields = REQUESTS[name].model_fields
        for parameter, spec in schema["properties"].items():
            field = fields[parameter]
            if field.description is not None:
                assert spec["description"] == one_line(field.description), (name, parameter)
            if not field.is_required() and field.default is not None:
                assert spec["default"] == field.default, (name, parameter)
            assert (parameter in schema.get("required", [])) == field.is_required(), (name, parameter)
    assert listed["start_run"]["properties"]["seed"]["minimum"] == 0  # the model's bound, said only there


def test_saying_again_what_the_model_says_is_refused_when_the_tool_is_made() -> None:
    async def start_run(ctx: Context, request: tools.StartRunRequest) -> CallToolResult:
        raise AssertionError("never called")

    with pytest.raises(TypeError, match=r"StartRunRequest.seed says its Ge, description itself"):
        takes(seed=Field(description="the seed", ge=0))(start_run)
    with pytest.raises(TypeError, match="StartRunRequest has no field 'sed'"):
        takes(sed=Field())(start_run)
    with pytest.raises(TypeError, match=r"StartRunRequest.backend does not take 'gpu'"):
        takes(backend=Annotated[Literal["cuda", "gpu"] | None, Field()])(start_run)
    made = takes(backend=Annotated[Literal["cuda"] | None, Field(description="where")], seed=Field())(start_run)
    assert list(made.__signature__.parameters) == ["ctx", "backend", "seed"]  # type: ignore[attr-defined]
