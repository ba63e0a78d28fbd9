"""Arguments and errors (issue 27, item 6) through real client sessions: numeric strings for integers, every
refusal in our own words (at most 2 KB, no long argument echoed, no pydantic text), and a JSON-RPC error for
a line on stdin that is not JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from adaexplore.config import Settings
from tests.server.test_lean_answers import server_with

ROOT = Path(__file__).resolve().parents[2]
TASK = (ROOT / "tests/executor/data/scale_relu_task.py").read_text()

pytestmark = pytest.mark.anyio


async def refused(client: Client, tool: str, arguments: dict[str, object]) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    text = result.content[0].text
    assert len(text) <= 2_000, len(text)
    for pydantic_words in ("pydantic", "validation error", "Input should", "input_value", "[type="):
        assert pydantic_words not in text, text
    return text


async def test_every_argument_error_says_what_is_wrong_and_how_to_fix_it(tmp_path: Path) -> None:
    async with Client(server_with(Settings(home=tmp_path))) as client:
        task = (await client.call_tool("create_task", {"source": TASK})).structured_content
        run = (await client.call_tool("start_run", {"task_id": task["task_id"]})).structured_content
        root = run["root_node_id"]

        missing = await refused(client, "expand_node", {"run_id": run["run_id"], "node_id": root})
        assert 'action is missing: action takes one of "small", "large"' in missing
        assert "Call it as expand_node(run_id, node_id, action)" in missing

        bad_enum = await refused(client, "expand_node", {"run_id": run["run_id"], "node_id": root, "action": "medium"})
        assert 'action takes one of "small", "large"' in bad_enum and 'you sent "medium"' in bad_enum

        huge = "r" * 5_000_000
        long_id = await refused(client, "select_uct", {"run_id": huge})
        assert "no run has id" in long_id and "<the run_id you sent, 5000000 characters>" in long_id
        assert "r" * 201 not in long_id

        long_code = await refused(client, "compile_and_profile", {"code": "x" * 1_500_000, "task_id": task["task_id"]})
        assert "code is 1500000 characters, and it takes at most 1000000" in long_code

        too_big = await refused(client, "get_node", {"node_id": 2**70})
        assert "node_id must be at most 9223372036854775807; you sent 1180591620717411303424" in too_big

        not_a_number = await refused(client, "get_node", {"node_id": "twelve"})
        assert not_a_number.startswith("get_node: node_id must be a whole number such as 12"), not_a_number
        assert '"twelve"' in not_a_number

        unknown = await refused(client, "get_node", {"node_id": 1, "x" * 300: 1})
        assert unknown.startswith("get_node takes no argument a name of 300 characters"), unknown
        assert "get_node(node_id, [include_code])" in unknown

        empty_code = await refused(client, "compile_and_profile", {"code": "", "task_id": task["task_id"]})
        assert "code takes a string, not empty" in empty_code

        # every refusal names its tool once, at its head
        for tool, text in [
            ("expand_node", missing),
            ("expand_node", bad_enum),
            ("select_uct", long_id),
            ("compile_and_profile", long_code),
            ("compile_and_profile", empty_code),
            ("get_node", too_big),
            ("get_node", not_a_number),
            ("get_node", unknown),
        ]:
            assert text.startswith(tool) and not text.startswith(f"{tool}: {tool}"), text

        no_tool = await refused(client, "get_nodes", {})
        assert 'there is no tool "get_nodes"; the tools are best_kernel, compile_and_profile' in no_tool


async def test_integer_parameters_take_numeric_strings(tmp_path: Path) -> None:
    async with Client(server_with(Settings(home=tmp_path))) as client:
        task = (await client.call_tool("create_task", {"source": TASK})).structured_content
        run = (await client.call_tool("start_run", {"task_id": task["task_id"], "seed": "7"})).structured_content
        assert run["seed"] == 7
        step = await client.call_tool(
            "expand_node", {"run_id": run["run_id"], "node_id": str(run["root_node_id"]), "action": "large"}
        )
        assert not step.is_error, step.content[0].text
        made = await client.call_tool(
            "compile_and_profile", {"code": "k", "expansion_id": str(step.structured_content["expansion_id"])}
        )
        assert not made.is_error, made.content[0].text
        assert made.structured_content["node_id"] is not None  # the expansion_id was read, so it joined the run
        node = await client.call_tool("get_node", {"node_id": f" {made.structured_content['node_id']} "})
        assert node.structured_content["code"] == "k"


def test_a_line_that_is_not_json_gets_a_parse_error_on_stdio(tmp_path: Path) -> None:
    env = dict(os.environ, ADAEXPLORE_HOME=str(tmp_path))
    env.pop("ADAEXPLORE_DB", None)
    lines = [
        "this is not json",
        json.dumps({"id": 3, "hello": "world"}),
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        ),
    ]
    done = subprocess.run(
        [sys.executable, "-m", "adaexplore", "serve"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    errors = [a["error"] for a in answers if "error" in a]
    assert [e["code"] for e in errors] == [-32700, -32600], done.stdout
    assert "one JSON object on one line" in errors[0]["message"]
    assert [a["result"]["serverInfo"]["name"] for a in answers if a.get("id") == 4] == ["adaexplore"]  # it went on
    assert "answered a stdin line with error -32700" in done.stderr
