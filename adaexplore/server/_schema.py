"""Keeping `tools/list` lean: the JSON schemas a client reads before its first call, without what pydantic adds
for its own sake (a title on every field, the `null` branch of a parameter, defaults of nothing), and descriptions
as one line.

What stays is what a caller needs: types, enums, bounds, what is required, and each field's description. It stays
portable too, as the MCP Inspector's `--strict` check has it (tests/server/test_portable_schemas.py): every `type`
is one JSON type, never an array such as ["number", "null"], which a host that maps tool schemas onto a
single-type dialect refuses or misreads; a result's field that may be null says so with pydantic's own
`anyOf: [{"type": "number"}, {"type": "null"}]`.
"""

from __future__ import annotations

import inspect
from typing import Any

from adaexplore.server._requests import MAX_CODE, MAX_INTEGER

__all__ = ["compact_input", "compact_output", "one_line"]

_NULL = {"type": "null"}
# An object type held in a result with more fields than this (an Evaluation, the SearchConfig) is listed as an
# object: the field's description says what it holds, and the data has it whole.
_MAX_NESTED_FIELDS = 8
# What an output's field may hold was checked when it was made: bounds and `required` say nothing to a reader.
_OUTPUT_NOISE = ("default", "required", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def one_line(text: str | None) -> str | None:
    """A docstring as one paragraph: no leading indentation, no line breaks inside it."""
    if text is None:
        return None
    return " ".join(inspect.cleandoc(text).split())


def _without_null(options: list[Any]) -> list[Any]:
    return [option for option in options if option != _NULL]


def _compact(schema: Any, *, optional_null: bool) -> Any:
    """`schema` without titles and empty defaults. `optional_null`: an input's `anyOf[X, null]` is X (leaving a
    parameter out is how a caller says "none"); an output's stays as it is, since the answer sends that null."""
    if isinstance(schema, list):
        return [_compact(item, optional_null=optional_null) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        # The bounds of every id and of every code or traceback are checked by the server, which refuses past them
        # with a message, and no client nears them: not worth a line of the listing.
        if (key == "default" and value is None) or (key == "maximum" and value == MAX_INTEGER):
            continue
        if key == "maxLength" and isinstance(value, int) and value >= MAX_CODE:
            continue
        if key == "description" and isinstance(value, str):
            out[key] = one_line(value)
        elif key in ("properties", "$defs"):
            out[key] = {name: _compact(sub, optional_null=optional_null) for name, sub in value.items()}
        else:
            out[key] = _compact(value, optional_null=optional_null)
    options = out.get("anyOf")
    if optional_null and isinstance(options, list) and _NULL in options:
        rest = _without_null(options)
        if len(rest) == 1:
            del out["anyOf"]
            out = {**rest[0], **out}
    return out


def compact_input(schema: dict[str, Any]) -> dict[str, Any]:
    return _compact(schema, optional_null=True)


def _drop_output_noise(schema: Any) -> Any:
    """An output schema describes what was sent: defaults, bounds, `required` and `additionalProperties: false`
    say nothing there."""
    if isinstance(schema, list):
        return [_drop_output_noise(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _OUTPUT_NOISE or (key == "additionalProperties" and value is False):
            continue
        if key in ("properties", "$defs"):
            out[key] = {name: _drop_output_noise(sub) for name, sub in value.items()}
        else:
            out[key] = _drop_output_noise(value)
    return out


def _refs(schema: Any) -> set[str]:
    if isinstance(schema, list):
        return set().union(*(_refs(item) for item in schema)) if schema else set()
    if not isinstance(schema, dict):
        return set()
    found = {schema["$ref"].rsplit("/", 1)[-1]} if isinstance(schema.get("$ref"), str) else set()
    return found.union(*(_refs(value) for key, value in schema.items() if key != "$defs"))


def _flatten_deep(schema: Any, defs: dict[str, Any]) -> Any:
    """`schema` with each reference to an object type replaced by a bare object (enums are kept)."""
    if isinstance(schema, list):
        return [_flatten_deep(item, defs) for item in schema]
    if not isinstance(schema, dict):
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = defs.get(ref.rsplit("/", 1)[-1], {})
        if target.get("type") == "object":
            return {"type": "object", **{k: v for k, v in schema.items() if k != "$ref"}}
        return schema
    return {key: _flatten_deep(value, defs) for key, value in schema.items()}


def _large(body: dict[str, Any]) -> bool:
    return body.get("type") == "object" and len(body.get("properties", {})) > _MAX_NESTED_FIELDS


def compact_output(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """An output schema two levels deep: the result's fields and the fields of the small objects it holds (a
    trail step, a kernel of a step), typed and described; a large object (more than `_MAX_NESTED_FIELDS` fields)
    and objects nested deeper are described as objects (the data itself has them whole)."""
    if schema is None:
        return None
    out: dict[str, Any] = _drop_output_noise(_compact(schema, optional_null=False))
    # a type's docstring is for this code's readers; the tool's description and the fields' say what it is
    out.pop("description", None)
    defs: dict[str, Any] = {
        name: {k: v for k, v in body.items() if k != "description"} for name, body in out.pop("$defs", {}).items()
    }
    if not defs:
        return out
    # a large object, nullable, becomes anyOf [{"type": "object"}, {"type": "null"}] as any other nullable field
    out = _flatten_deep(out, {name: body for name, body in defs.items() if _large(body)})
    top = _refs(out)
    kept = {name: defs[name] for name in top if name in defs}
    kept = {name: _flatten_deep(body, defs) if body.get("type") == "object" else body for name, body in kept.items()}
    kept |= {name: defs[name] for name in _refs(kept) if name in defs and name not in kept}  # enums held there
    return {**out, "$defs": dict(sorted(kept.items()))} if kept else out
