"""Every tool's input and output schema is portable: nothing that the MCP Inspector's `--strict` check reports on a
`tools/list` (issue 40). Some hosts refuse a whole tool list, or drop a constraint, over a schema that is legal JSON
Schema but outside the subset they read.

`lint` applies the Inspector's rules (its `core/json/schemaLint.ts`, which `mcp-inspector --cli … --method
tools/list --strict` reports; the rule names are its own), walking the same subschema positions:

- boolean-schema (error): a bare `true` or `false` where a schema object is expected (Claude Code refuses the
  tool list); allowed under additionalProperties, unevaluatedProperties, additionalItems and unevaluatedItems.
- type-union (warning): `type` given as an array (`["number", "null"]`), which a host that maps tool schemas onto a
  single-type dialect (the OpenAPI subset of Gemini's function declarations) rejects or misreads; `anyOf` branches
  of one type each are the portable spelling.
- untyped-schema (warning): a schema without a single keyword that constrains a value (`{}`, a description
  alone), so it accepts anything; `if` counts only with `then` or `else`, and under `not` `{}` is idiomatic.
- remote-ref (warning): a `$ref` outside the document (hosts fetch nothing), unless the document declares an `$id`.
- non-object-root (error): an input schema whose root `type` is not "object", which MCP requires (an earlier
  version of the Inspector's lint had it; the SDK's parser refuses such a tool before the lint sees it).

The schemas must stay true while portable: a result's field that the answer may send as null still admits null.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from mcp import Client
from mcp.server.mcpserver import MCPServer

from adaexplore.config import Settings
from adaexplore.server import build_server

pytestmark = pytest.mark.anyio

BOOLEAN_VALUED = {"additionalProperties", "unevaluatedProperties", "additionalItems", "unevaluatedItems"}
ONE_SCHEMA = [
    "items",
    "contains",
    "not",
    "propertyNames",
    "if",
    "then",
    "else",
    "additionalProperties",
    "unevaluatedProperties",
    "additionalItems",
    "unevaluatedItems",
    "contentSchema",
]
SCHEMA_LISTS = ["allOf", "anyOf", "oneOf", "prefixItems"]
SCHEMA_MAPS = ["properties", "patternProperties", "dependentSchemas", "dependencies", "$defs", "definitions"]
# The keywords that constrain a value (the Inspector's allowlist): annotations (description, title, default,
# examples, …) and definitions ($defs, $id, $schema) constrain nothing.
CONSTRAINING = {
    *("type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"),
    *("maxLength", "minLength", "pattern", "format", "contentMediaType", "contentEncoding", "contentSchema"),
    *("maxItems", "minItems", "uniqueItems", "maxContains", "minContains", "maxProperties", "minProperties"),
    *("required", "dependentRequired", "allOf", "anyOf", "oneOf", "not", "items", "prefixItems", "contains"),
    *("additionalItems", "unevaluatedItems", "properties", "patternProperties", "additionalProperties"),
    *("unevaluatedProperties", "propertyNames", "dependentSchemas", "dependencies", "$ref", "$dynamicRef"),
    "$recursiveRef",
}
JSON_TYPES = {"null", "boolean", "object", "array", "number", "string", "integer"}
ERRORS = {"boolean-schema", "non-object-root"}


def _subschemas(node: dict[str, Any], path: str) -> list[tuple[Any, str, str]]:
    """(subschema, its path, the keyword it sits under) for every schema position directly under `node`."""
    found: list[tuple[Any, str, str]] = []
    for key in SCHEMA_MAPS:
        if isinstance(node.get(key), dict):
            found += [(sub, f"{path}.{key}.{name}".lstrip("."), key) for name, sub in node[key].items()]
    for key in SCHEMA_LISTS:
        if isinstance(node.get(key), list):
            found += [(sub, f"{path}.{key}[{i}]".lstrip("."), key) for i, sub in enumerate(node[key])]
    for key in ONE_SCHEMA:
        if key in node:
            value = node[key]
            if key == "items" and isinstance(value, list):
                found += [(sub, f"{path}.items[{i}]".lstrip("."), key) for i, sub in enumerate(value)]
            else:
                found.append((value, f"{path}.{key}".lstrip("."), key))
    return found


def _declares_id(node: Any, depth: int = 0) -> bool:
    if depth > 64 or not isinstance(node, dict):
        return False
    if isinstance(node.get("$id"), str) and node["$id"]:
        return True
    return any(_declares_id(sub, depth + 1) for sub, _, _ in _subschemas(node, ""))


def lint(schema: Any, kind: str = "inputSchema") -> list[tuple[str, str]]:
    """The (rule, path) findings of the Inspector's portability lint on one of a tool's schemas."""
    findings: list[tuple[str, str]] = []
    if kind == "inputSchema" and isinstance(schema, dict) and schema.get("type") != "object":
        findings.append(("non-object-root", ""))
    with_ids = _declares_id(schema)

    def walk(node: Any, path: str, keyword: str | None, depth: int) -> None:
        if depth > 64:
            return
        if isinstance(node, bool):
            if keyword not in BOOLEAN_VALUED:
                findings.append(("boolean-schema", path))
            return
        if not isinstance(node, dict):
            return  # not a schema at all: malformed, the SDK's parser refuses it
        kinds = node.get("type")
        if isinstance(kinds, list) and kinds and len(set(kinds)) == len(kinds) and set(kinds) <= JSON_TYPES:
            findings.append(("type-union", path))
        ref = node.get("$ref")
        if isinstance(ref, str) and ref and not ref.startswith("#") and not with_ids:
            findings.append(("remote-ref", path))
        constrains = bool(CONSTRAINING & set(node)) or ("if" in node and ("then" in node or "else" in node))
        if not constrains and keyword != "not":
            findings.append(("untyped-schema", path))
        for sub, sub_path, sub_keyword in _subschemas(node, path):
            walk(sub, sub_path, sub_keyword, depth + 1)

    walk(schema, "", None, 0)
    return findings


async def _listed(tmp_path: Path) -> list[dict[str, Any]]:
    """tools/list as it goes over the wire, from a real server."""
    async with Client(build_server(Settings(home=tmp_path))) as client:
        listed = await client.list_tools()
    return json.loads(listed.model_dump_json(by_alias=True, exclude_none=True))["tools"]


async def test_no_tool_schema_has_anything_the_inspectors_strict_check_reports(tmp_path: Path) -> None:
    tools = await _listed(tmp_path)
    assert len(tools) == 12 and all("outputSchema" in tool for tool in tools)
    report = [
        f"{'Error' if rule in ERRORS else 'Warning'}: tool {tool['name']!r} {kind}{'.' + path if path else ''}: {rule}"
        for tool in tools
        for kind in ("inputSchema", "outputSchema")
        for rule, path in lint(tool.get(kind), kind)
    ]
    assert report == [], "\n".join(report)


async def test_what_may_be_null_is_still_said_to_be(tmp_path: Path) -> None:
    """Each field of a result (and of the small objects a result holds) admits null in the listed schema exactly
    where pydantic's own schema of the result admits it, and every input the tools take still refuses null."""
    server = build_server(Settings(home=tmp_path))
    own = {tool.name: tool for tool in await MCPServer.list_tools(server)}
    nullable = 0
    for tool in await _listed(tmp_path):
        full, listed = own[tool["name"]].output_schema, tool["outputSchema"]
        assert full is not None
        pairs = [(full, listed)] + [
            ({**full["$defs"][name], "$defs": full["$defs"]}, {**body, "$defs": listed.get("$defs", {})})
            for name, body in listed.get("$defs", {}).items()
            if "properties" in body
        ]
        for whole, shown in pairs:
            assert shown["properties"].keys() == whole["properties"].keys(), tool["name"]
            for name, spec in whole["properties"].items():
                admits = _admits_null(whole, spec)
                assert _admits_null(shown, shown["properties"][name]) == admits, (tool["name"], name)
                nullable += admits
        for name, spec in tool["inputSchema"]["properties"].items():
            assert not _admits_null(tool["inputSchema"], spec), (tool["name"], name)  # left out, never null
    assert nullable >= 30  # the result fields that may be null (a node's speedup, a run's best node, …)


def _admits_null(root: dict[str, Any], spec: dict[str, Any]) -> bool:
    return Draft202012Validator({**spec, "$defs": root.get("$defs", {})}).is_valid(None)


@pytest.mark.parametrize(
    ("schema", "found"),
    [
        ({"type": "object", "properties": {"a": {"type": ["number", "null"]}}}, [("type-union", "properties.a")]),
        ({"type": "object", "properties": {"a": {"anyOf": [{"type": "number"}, {"type": "null"}]}}}, []),
        ({"type": "object", "properties": {"a": True}}, [("boolean-schema", "properties.a")]),
        (
            {"type": "object", "properties": {"a": {"type": "array", "items": False}}},
            [("boolean-schema", "properties.a.items")],
        ),
        ({"type": "object", "additionalProperties": False, "properties": {}}, []),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, []),
        ({"type": "object", "properties": {"a": {"description": "anything"}}}, [("untyped-schema", "properties.a")]),
        ({"type": "object", "properties": {"a": {}}}, [("untyped-schema", "properties.a")]),
        ({"type": "object", "properties": {"a": {"if": {"type": "string"}}}}, [("untyped-schema", "properties.a")]),
        ({"type": "object", "properties": {"a": {"not": {}}}}, []),
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"enum": [1, 2]}}}, []),
        (
            {"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}},
            [("remote-ref", "properties.a")],
        ),
        (
            {"$id": "https://example.com/t", "type": "object", "properties": {"a": {"$ref": "https://example.com/t"}}},
            [],
        ),
        (
            {"type": "object", "$defs": {"B": {"type": "object", "properties": {"b": {"type": ["string", "null"]}}}}},
            [("type-union", "$defs.B.properties.b")],
        ),
        (
            {"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {}]}}},
            [("untyped-schema", "properties.a.anyOf[1]")],
        ),
        ({"type": "array", "items": {"type": "string"}}, [("non-object-root", "")]),
    ],
)
def test_the_check_finds_what_the_inspector_reports(schema: dict[str, Any], found: list[tuple[str, str]]) -> None:
    assert lint(schema) == found


def test_an_output_schema_may_have_any_root() -> None:
    assert lint({"type": "string"}, "outputSchema") == []
