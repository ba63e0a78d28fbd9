"""The budgets of what a client reads (issue 27, item 4): tools/list in 20 KB, expand_node carrying each text
once (about 12 K characters for a KernelBench Level 2 task), get_skill_memory's text once."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from adaexplore.config import Settings
from adaexplore.executor import Status
from adaexplore.server import build_server
from adaexplore.store import open_store
from adaexplore.tools import Services
from tests.fakes import FakeEvaluator

ROOT = Path(__file__).resolve().parents[2]
LEVEL2 = ROOT.parent / "shared/data/kernelbench/level2/12_Gemm_Multiply_LeakyReLU.py"
KERNEL = (Path(__file__).parent / "data/gemm_multiply_leakyrelu_kernel.py").read_text()
TOOLS_LIST_BUDGET = 20_000
STEP_BUDGET = 12_000

pytestmark = pytest.mark.anyio

# The tools and their parameters (required ones first): a change here is a change for every client.
PARAMETERS = {
    "best_kernel": ["run_id"],
    "compile_and_profile": [
        "code",
        "[action]",
        "[backend]",
        "[expansion_id]",
        "[mode]",
        "[parent_id]",
        "[run_id]",
        "[task_id]",
    ],
    "confirm_rule": ["code", "rule_id", "task_id", "[backend]"],
    "create_task": ["[name]", "[path]", "[small_sizes]", "[source]"],
    "expand_node": ["action", "node_id", "run_id"],
    "finish_run": ["run_id"],
    "get_node": ["node_id", "[include_code]"],
    "get_run": ["run_id"],
    "get_skill_memory": ["[backend]", "[format]", "[min_occurrences]", "[min_tasks]", "[triton]"],
    "record_failure": ["task_id", "[code]", "[error_text]", "[node_id]", "[rule]", "[status]"],
    "select_uct": ["run_id"],
    "start_run": ["task_id", "[backend]", "[mode]", "[model]", "[preset]", "[seed]", "[total_steps]"],
}


def ok_verdict(code: str, _: int) -> tuple[Status, float | None]:
    return Status.ok, 1.0 + len(code) % 7 / 10


def server_with(settings: Settings):  # type: ignore[no-untyped-def]
    @contextlib.asynccontextmanager
    async def services(s: Settings) -> AsyncIterator[Services]:
        store = open_store(s.database_url)
        try:
            yield Services(settings=s, store=store, evaluator=FakeEvaluator(ok_verdict))
        finally:
            store.close()

    return build_server(settings, services=services)


async def call(client: Client, tool: str, **arguments: object) -> tuple[str, dict]:
    """The summary text and the structured content of a call that must succeed."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return result.content[0].text, result.structured_content


async def test_the_tool_list_fits_its_budget_and_names_the_reviewed_parameters(tmp_path: Path) -> None:
    async with Client(server_with(Settings(home=tmp_path))) as client:
        listed = await client.list_tools()
    wire = listed.model_dump_json(by_alias=True, exclude_none=True)
    assert len(wire) <= TOOLS_LIST_BUDGET, f"tools/list is {len(wire)} characters, over {TOOLS_LIST_BUDGET}"
    seen = {}
    for tool in listed.tools:
        required = tool.input_schema.get("required", [])
        optional = sorted(f"[{name}]" for name in tool.input_schema["properties"] if name not in required)
        seen[tool.name] = sorted(required) + optional
        assert "\n" not in tool.description and "  " not in tool.description, tool.name
        # every optional integer is a plain integer, so a client that types its fields can fill it in
        for name, spec in tool.input_schema["properties"].items():
            assert "anyOf" not in spec and "title" not in spec, (tool.name, name, spec)
    assert seen == PARAMETERS


@pytest.mark.skipif(not LEVEL2.is_file(), reason="the KernelBench data (../shared/data/kernelbench) is not here")
async def test_a_step_on_a_level2_task_carries_each_text_once_within_its_budget(tmp_path: Path) -> None:
    task_source = LEVEL2.read_text()
    edited = KERNEL.replace("num_stages=3", "num_stages=4")
    async with Client(server_with(Settings(home=tmp_path))) as client:
        _, task = await call(client, "create_task", source=task_source, name="gemm_multiply_leakyrelu")
        _, run = await call(client, "start_run", task_id=task["task_id"], seed=1)
        _, first = await call(
            client,
            "compile_and_profile",
            code=KERNEL,
            run_id=run["run_id"],
            parent_id=run["root_node_id"],
            action="large",
        )
        _, second = await call(
            client, "compile_and_profile", code=edited, run_id=run["run_id"], parent_id=first["node_id"], action="small"
        )
        _, memory = await call(client, "get_skill_memory")
        skill = memory["prompt"]
        assert skill and len(skill) > 1_000  # the starter memory is injected, so the budget covers it

        summary, small = await call(
            client, "expand_node", run_id=run["run_id"], node_id=second["node_id"], action="small"
        )
        answer = summary + json.dumps(small, ensure_ascii=False)
        assert len(answer) <= STEP_BUDGET, f"a small step's answer is {len(answer)} characters"
        assert answer.count(json.dumps(skill, ensure_ascii=False)[1:-1]) == 1
        assert answer.count(json.dumps(edited, ensure_ascii=False)[1:-1]) == 1  # the kernel to edit, once
        # the earlier kernel of this line: the instructions list its verdict, not its code, so its code is absent
        assert json.dumps(KERNEL, ensure_ascii=False)[1:-1] not in answer
        assert [k["node_id"] for k in small["working_memory"]] == [first["node_id"]]
        assert small["current"]["node_id"] == second["node_id"]
        assert task_source.strip().splitlines()[-1] in small["instructions"]

        summary, large = await call(
            client, "expand_node", run_id=run["run_id"], node_id=second["node_id"], action="large"
        )
        answer = summary + json.dumps(large, ensure_ascii=False)
        assert answer.count(json.dumps(skill, ensure_ascii=False)[1:-1]) == 1
        assert large["pool"], "a large step from a correct line has that line's best kernel in its pool"
        for kernel in large["pool"]:
            code = edited if kernel["node_id"] == second["node_id"] else KERNEL
            assert answer.count(json.dumps(code, ensure_ascii=False)[1:-1]) == 1, kernel["node_id"]


async def test_the_skill_memory_comes_once_and_its_counts_on_request(tmp_path: Path) -> None:
    async with Client(server_with(Settings(home=tmp_path))) as client:
        result = await client.call_tool("get_skill_memory", {})
        prompt = result.structured_content["prompt"]
        first_rule = prompt.splitlines()[1][2:]  # "- You cannot …"
        whole = result.content[0].text + json.dumps(result.structured_content, ensure_ascii=False)
        assert first_rule.startswith("You cannot") and whole.count(first_rule) == 1
        assert result.structured_content["rules"] == []
        _, data = await call(client, "get_skill_memory", format="data")
        assert first_rule in [rule["text"] for rule in data["rules"]] and data["prompt"] is None
