"""The tool list a client sees (names, descriptions, parameter and result schemas, annotations) against a
reviewed copy, so that a change to the contract with every MCP client is a visible change in review.

After an intended change, rewrite the copy and review its diff:

    ADAEXPLORE_UPDATE_SNAPSHOT=1 .venv/bin/python -m pytest tests/server/test_tools_snapshot.py
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path

import pytest
from mcp import Client

from adaexplore.config import Settings
from adaexplore.server import build_server

SNAPSHOT = Path(__file__).parent / "data" / "tools_list.json"

pytestmark = pytest.mark.anyio


async def listed(settings: Settings) -> str:
    async with Client(build_server(settings)) as client:
        tools = (await client.list_tools()).tools
    entries = [
        {
            "name": tool.name,
            "description": tool.description,
            "annotations": tool.annotations.model_dump(exclude_none=True) if tool.annotations else None,
            "input_schema": tool.input_schema,
            "output_schema": tool.output_schema,
        }
        for tool in sorted(tools, key=lambda t: t.name)
    ]
    return json.dumps(entries, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


async def test_the_tool_list_matches_the_reviewed_copy(tmp_path: Path) -> None:
    current = await listed(Settings(home=tmp_path))
    if os.environ.get("ADAEXPLORE_UPDATE_SNAPSHOT") == "1":
        SNAPSHOT.write_text(current)
    expected = SNAPSHOT.read_text()
    if current != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True), current.splitlines(keepends=True), "reviewed", "current", n=2
            )
        )
        pytest.fail(
            "the tools clients see have changed; if that is intended, rerun with ADAEXPLORE_UPDATE_SNAPSHOT=1 "
            f"and review the diff of {SNAPSHOT.name}:\n{diff[:6000]}"
        )
