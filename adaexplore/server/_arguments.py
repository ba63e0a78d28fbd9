"""A tool call's arguments, checked against the tool's input schema before the tool runs, and every refusal in
our own words: what is wrong, how to fix it, at most 2 KB, never a long argument echoed back and never
pydantic's text. Integer parameters take numeric strings ("3"), which some clients send for every number."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

__all__ = ["MAX_MESSAGE", "check_arguments", "explain_validation", "our_message", "shown"]

MAX_MESSAGE = 2_000
_SHOWN = 60  # an argument is quoted in a message only up to this length
_LONG = 200  # an argument this long is never repeated, whoever writes the message
_WHOLE_NUMBER = re.compile(r"\s*[+-]?\d+\s*")

_JSON_TYPES: dict[str, Any] = {
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "null": lambda v: v is None,
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}
_TYPE_WORDS = {
    "integer": "a whole number such as 12",
    "number": "a number",
    "boolean": "true or false",
    "string": "a string",
    "array": "a list",
    "object": "an object",
}


def _json_type_of(value: Any) -> str:
    return next((name for name, fits in _JSON_TYPES.items() if fits(value)), type(value).__name__)


def _types(spec: dict[str, Any]) -> set[str]:
    """The JSON types a parameter's schema admits (empty: not known from the schema alone)."""
    if isinstance(spec.get("type"), str):
        return {spec["type"]}
    if isinstance(spec.get("type"), list):
        return set(spec["type"])
    if "enum" in spec:
        return {_json_type_of(v) for v in spec["enum"]}
    options = spec.get("anyOf") or spec.get("oneOf")
    if options:
        found = [_types(option) for option in options]
        return set().union(*found) if all(found) else set()
    return set()


def shown(value: Any) -> str:
    """A value as a message may quote it: whole when short, else only what it is and how long."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= _SHOWN:
        return text
    return f"a {_json_type_of(value)} of {len(text)} characters"


def _wanted(name: str, spec: dict[str, Any]) -> str:
    return f"{name} takes {_takes(spec)}"


def _takes(spec: dict[str, Any]) -> str:
    """What a parameter takes, in words, from its schema."""
    if "enum" in spec:
        what = "one of " + ", ".join(json.dumps(v) for v in spec["enum"])
    else:
        what = " or ".join(_TYPE_WORDS.get(t, t) for t in sorted(_types(spec) - {"null"})) or "a value"
    bounds = []
    if "minimum" in spec:
        bounds.append(f"at least {spec['minimum']}")
    if "maximum" in spec:
        bounds.append(f"at most {spec['maximum']}")
    if "maxLength" in spec:
        bounds.append(f"at most {spec['maxLength']} characters")
    if spec.get("minLength"):
        bounds.append("not empty")
    about = f" ({spec['description']})" if spec.get("description") else ""
    return f"{what}{', ' + ', '.join(bounds) if bounds else ''}{about}"


def _signature(tool: str, schema: dict[str, Any]) -> str:
    required = schema.get("required", [])
    names = [*required, *(f"[{n}]" for n in schema.get("properties", {}) if n not in required)]
    return f"{tool}({', '.join(names)})"


def check_arguments(tool: str, arguments: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """`arguments` as the tool takes them: numeric strings of integer parameters made integers.

    Raises:
        ValueError: an argument the tool does not take, or one of the wrong JSON type; the message says which
            and what the tool takes.
    """
    properties: dict[str, dict[str, Any]] = schema.get("properties", {})
    unknown = sorted(set(arguments) - set(properties))
    if unknown:
        names = ", ".join(repr(n) if len(n) <= _SHOWN else f"a name of {len(n)} characters" for n in unknown)
        raise ValueError(f"{tool} takes no argument {names}; call it as {_signature(tool, schema)}")
    checked = dict(arguments)
    for name, value in arguments.items():
        spec = properties[name]
        types = _types(spec)
        if not types or any(_JSON_TYPES[t](value) for t in types if t in _JSON_TYPES):
            continue
        if value is None and name not in schema.get("required", []):
            continue  # null is how some clients leave an optional argument out
        if "integer" in types and isinstance(value, str) and _WHOLE_NUMBER.fullmatch(value):
            checked[name] = int(value)
            continue
        raise ValueError(f"{name} must be {_takes(spec)}; not {shown(value)}")  # our_message names the tool
    return checked


def _one(tool: str, error: Any, arguments: dict[str, Any], schema: dict[str, Any]) -> str:
    loc = [str(part) for part in error.get("loc", ())]
    name = loc[0] if loc else "the arguments"
    spec = schema.get("properties", {}).get(name, {})
    kind = error.get("type", "")
    given = f"; you sent {shown(arguments[name])}" if name in arguments else ""
    if kind == "missing":
        return f"{name} is missing: {_wanted(name, spec)}"
    if kind == "string_too_long" and isinstance(arguments.get(name), str):
        limit = error.get("ctx", {}).get("max_length", spec.get("maxLength"))
        return f"{name} is {len(arguments[name])} characters, and it takes at most {limit}: send less"
    bounds = error.get("ctx", {})
    for key, word in (("ge", "at least"), ("le", "at most"), ("gt", "more than"), ("lt", "less than")):
        if key in bounds and kind.endswith(("than", "than_equal")):
            return f"{name} must be {word} {bounds[key]}{given}: {_wanted(name, spec)}"
    if kind in ("literal_error", "enum"):
        return f"{_wanted(name, spec)}{given}"
    if kind.startswith(("int_", "string_", "bool_", "float_", "dict_", "list_")):
        return f"{_wanted(name, spec)}{given}"
    inside = ".".join(loc[1:])
    return f"{name}{'.' + inside if inside else ''}: {error.get('msg', 'not valid')}{given}"


def explain_validation(tool: str, exc: ValidationError, arguments: dict[str, Any], schema: dict[str, Any]) -> str:
    """A refusal of the SDK's argument check, in our words (pydantic's own text quotes the input whole and
    links to its documentation)."""
    parts = [_one(tool, error, arguments, schema) for error in exc.errors(include_url=False, include_input=False)]
    return _capped(f"{tool}: {'; '.join(dict.fromkeys(parts))}. Call it as {_signature(tool, schema)}.")


def our_message(tool: str, message: str, arguments: dict[str, Any]) -> str:
    """A tool's refusal as the caller reads it: the SDK's prefix gone, the tool named once at its head, long
    arguments not repeated, capped."""
    prefix = f"Error executing tool {tool}: "
    text = message[len(prefix) :] if message.startswith(prefix) else message
    for name, value in arguments.items():
        if isinstance(value, str) and len(value) > _LONG:
            text = text.replace(value, f"<the {name} you sent, {len(value)} characters>")
    named = text.startswith((f"{tool}: ", f"{tool} "))  # "get_node takes no argument …" names it already
    return _capped(text if named else f"{tool}: {text}")


def _capped(text: str) -> str:
    if len(text) <= MAX_MESSAGE:
        return text
    return text[: MAX_MESSAGE - 40] + " … (the rest of this message is cut)"
