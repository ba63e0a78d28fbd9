"""The values a walk of a kernel's Triton IR needs: those its stores' addresses and masks are made of (and its
loads', where loads are watched), followed back through the operations, loops and branches that make them. A
walk computes nothing else, so an index computed only to load (`offs % S` over a whole block) costs nothing."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["LOADS", "STORES", "needed_values"]

STORES = {
    "tt.store",
    "tt.atomic_rmw",
    "tt.atomic_cas",
    "tt.descriptor_store",
    "tt.descriptor_reduce",
    "tt.descriptor_scatter",
}
LOADS = {"tt.load", "tt.descriptor_load"}
_FOR = re.compile(r"(%[\w.$-]+)\s*=\s*(%[\w.$#-]+)\s+to\s+(%[\w.$#-]+)\s+step\s+(%[\w.$#-]+)")


def _all(ops: Iterable[Any]) -> Iterable[Any]:
    for op in ops:
        yield op
        for region in op.regions:
            yield from _all(region)


def _yielded(region: list[Any]) -> list[str]:
    return region[-1].operands() if region and region[-1].name == "scf.yield" else []


def _iter_args(op: Any) -> tuple[list[str], list[str]]:
    carried = re.search(r"iter_args\((.*?)\)\s*->", op.text) or re.search(r"iter_args\((.*)\)", op.text)
    pairs = re.findall(r"(%[\w.$-]+)\s*=\s*(%[\w.$#-]+)", carried.group(1)) if carried else []
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _sources(body: list[Any]) -> dict[str, list[str]]:
    """What each value is made from: an operation's operands, a loop's carried value's start and yield."""
    made: dict[str, list[str]] = {}
    for op in _all(body):
        for result in op.results:
            made[result] = op.operands()
        if op.name == "scf.for":
            names, inits = _iter_args(op)
            yielded = _yielded(op.regions[0]) if op.regions else []
            for i, name in enumerate(names):
                made[name] = [inits[i], *yielded[i : i + 1]]
                if i < len(op.results):
                    made[op.results[i]] = made[name]
        elif op.name == "scf.if":
            for i, result in enumerate(op.results):
                made[result] = [y for branch in op.regions for y in _yielded(branch)[i : i + 1]]
    return made


def _reaches(name: str, watch: frozenset[str], made: dict[str, list[str]]) -> bool:
    """Whether the value `name` may be made from one of the arguments `watch` names."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        if current.lstrip("%") in watch:
            return True
        todo.extend(made.get(current, []))
    return False


def needed_values(body: list[Any], watch: frozenset[str]) -> set[str]:
    """The names of the values a walk of `body` needs; the addresses and masks of loads from the arguments `watch`
    names count too."""
    needed: set[str] = set()
    made = _sources(body) if watch else {}
    for op in _all(body):
        if op.name in STORES or (
            watch and op.name in LOADS and op.operands() and _reaches(op.operands()[0], watch, made)
        ):
            needed.update(_addressing(op))
        elif op.name in ("scf.while", "tt.call"):
            needed.update(op.operands())
        if op.name == "scf.while":  # not walked as a loop: everything in it is taken
            for region in op.regions:
                for inner in _all(region):
                    needed.update(inner.operands())
                    needed.update(inner.results)
    while True:
        before = len(needed)
        _back(body, needed)
        if len(needed) == before:
            return needed


def _addressing(op: Any) -> list[str]:
    """The operands of a store or a load that say where it reaches: its pointer (or descriptor and offsets) and its
    mask, not the value it stores or the value a masked load gives elsewhere."""
    operands = op.operands()
    if op.name == "tt.store":
        return operands[:1] + operands[2:3]
    if op.name == "tt.atomic_rmw":
        return operands[:1] + operands[2:3]
    if op.name == "tt.atomic_cas":
        return operands[:1]
    if op.name == "tt.load":
        return operands[:2]
    if op.name in ("tt.descriptor_store", "tt.descriptor_reduce", "tt.descriptor_scatter"):
        return operands[:-1]
    return operands


def _touches(region: list[Any], needed: set[str]) -> bool:
    """Whether the region stores, loads from a watched argument, or makes a value needed."""
    return any(
        op.name in STORES
        or (op.name in LOADS and op.operands()[:1] and op.operands()[0] in needed)
        or any(r in needed for r in op.results)
        for op in _all(region)
    )


def _back(ops: list[Any], needed: set[str]) -> None:
    for op in reversed(ops):
        results = op.results
        if op.name == "scf.for":
            body = op.regions[0] if op.regions else []
            names, inits = _iter_args(op)
            yielded = _yielded(body)
            for i, name in enumerate(names):
                if name in needed or (i < len(results) and results[i] in needed):
                    needed.add(name)
                    needed.add(inits[i])
                    if i < len(yielded):
                        needed.add(yielded[i])
            bounds = _FOR.match(op.text)
            if bounds is not None and (any(r in needed for r in results) or _touches(body, needed)):
                needed.update(bounds.groups()[1:])
            _back(body, needed)
        elif op.name == "scf.if":
            for i, result in enumerate(results):
                if result in needed:
                    for branch in op.regions:
                        yielded = _yielded(branch)
                        if i < len(yielded):
                            needed.add(yielded[i])
            if any(r in needed for r in results) or any(_touches(b, needed) for b in op.regions):
                needed.update(op.operands()[:1])
            for branch in op.regions:
                _back(branch, needed)
        elif op.name not in LOADS and any(r in needed for r in results):
            needed.update(op.operands())  # (what a load gives is never known: what it reads from is not needed)
