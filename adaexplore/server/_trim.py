"""Keeping every answer a model reads under a budget: long strings are cut, and say where the whole is."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["BUDGET_CHARS", "trim"]

# About 20 000 tokens at the ~3.5 characters per token of code and JSON.
BUDGET_CHARS = 70_000
_FLOOR = 2_000


def _cut(text: str, limit: int, where: str) -> str:
    if len(text) <= limit:
        return text
    half = max(limit // 2 - 80, 200)
    return f"{text[:half]}\n… [{len(text) - 2 * half} characters trimmed; the whole text: {where}] …\n{text[-half:]}"


def trim(
    data: dict[str, Any], resources: dict[str, str], budget: int = BUDGET_CHARS, last: tuple[str, ...] = ()
) -> dict[str, Any]:
    """`data` with its longest strings cut until its JSON fits `budget`. `resources` maps a dotted path
    ("evaluation.error.traceback", "pool.2.code") to the resource URI holding that string's whole text (or
    to where else the whole text is found). The paths in `last` are cut only once every other string is."""
    size = len(json.dumps(data))
    if size <= budget:
        return data
    strings: list[tuple[int, list[str | int]]] = []

    def walk(value: Any, path: list[str | int]) -> None:
        if isinstance(value, str) and len(value) > _FLOOR:
            strings.append((len(value), path))
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(item, [*path, key])
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, [*path, index])

    walk(data, [])
    strings.sort(key=lambda s: (".".join(map(str, s[1])) in last, -s[0]))
    excess = size - budget
    for length, path in strings:
        if excess <= 0:
            break
        parent: Any = data
        for step in path[:-1]:
            parent = parent[step]
        dotted = ".".join(str(p) for p in path)
        where = resources.get(dotted) or next(
            (uri for prefix, uri in resources.items() if dotted.startswith(prefix)), "not kept in full"
        )
        limit = max(_FLOOR, length - excess)
        parent[path[-1]] = _cut(parent[path[-1]], limit, where)
        excess -= length - len(parent[path[-1]])
    return data
