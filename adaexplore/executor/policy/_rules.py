"""The policy's rules as lookups over its tables, shared by the static checker and the worker.

`banned_name` and `attribute_refused` say which rule a dotted name or an attribute read breaks (the worker
asks the same question at run time); `needs_owner` tells attributes only the candidate's own objects may
use; `Violation` is one broken rule, as the checker reports it.
"""

from __future__ import annotations

from dataclasses import dataclass

from adaexplore.executor.policy._tables import _BANNED_NAMES, ALLOWED_IMPORTS
from adaexplore.executor.policy._tables_attrs import (
    _ALLOWED_DUNDERS,
    _FORMAT_METHODS,
    _FRAME_PREFIXES,
    _LAUNCHER_ATTRS,
    _MODULE_ATTRS,
    _NAMESPACE_ATTRS,
    _SEED_ATTRS,
)

# Allowed modules inside a banned package (triton.tools.tensor_descriptor in triton.tools): the ban of the package
# stops at them, and what they hold is checked by the rules as any allowed module's is.
_ALLOWED_INSIDE = {banned: tuple(m for m in ALLOWED_IMPORTS if m.startswith(banned + ".")) for banned in _BANNED_NAMES}


def banned_name(dotted: str) -> str | None:
    """The message for a dotted name (import aliases resolved) that a candidate may not use, or None."""
    for banned, message in _BANNED_NAMES.items():
        if dotted == banned or dotted.startswith(banned + "."):
            if any(dotted == m or dotted.startswith(m + ".") for m in _ALLOWED_INSIDE[banned]):
                continue
            return message
    return None


def attribute_refused(name: str, *, owned: bool) -> tuple[str, str] | None:
    """The (code, message) of the rule that reading attribute `name` breaks, however it is read (`x.name`,
    `getattr(x, "name")`, `case C(name=...)`); `owned`: the object is the candidate's own self or cls."""
    if name in _MODULE_ATTRS:
        return (
            "module_reach",
            f"You cannot use .{name}; it reaches the process, files or interpreter, which belong to the evaluator.",
        )
    if name.startswith(_FRAME_PREFIXES):
        return "introspection", f"You cannot read .{name}; code objects and frames belong to the evaluator."
    if name in _FORMAT_METHODS:
        return (
            "introspection",
            f"You cannot use .{name} except on a literal string with plain fields ({{}}, {{0}}, {{name}}); use "
            "an f-string.",
        )
    if name in _SEED_ATTRS:
        return "introspection", f"You cannot read .{name}; the random state belongs to the evaluator."
    if name in _LAUNCHER_ATTRS and not owned:
        return (
            "introspection",
            f"You cannot use .{name}; launch a kernel as kernel[grid](...), the one way the evaluator checks.",
        )
    if name in _NAMESPACE_ATTRS:
        return (
            "introspection",
            f"You cannot use .{name}; it hands out namespaces, modules, files or operator hooks, which belong "
            "to the evaluator.",
        )
    if name.startswith("__") and name.endswith("__"):
        if name in _ALLOWED_DUNDERS:
            return None
        return (
            "introspection",
            f"You cannot use .{name}; special attributes other than protocol methods (such as __init__ and "
            "__call__) reach the evaluator's objects.",
        )
    if name.startswith("_") and not owned:
        return "private_attribute", f"You cannot access private attribute .{name} of another object; use public APIs."
    return None


@dataclass(frozen=True)
class Violation:
    code: str
    message: str
    line: int


def needs_owner(name: str) -> bool:
    """Whether the rules allow reading attribute `name` only on the candidate's own objects (self._x)."""
    return attribute_refused(name, owned=False) is not None and attribute_refused(name, owned=True) is None
