"""The policy's checks against real objects, for the worker where torch and triton are loaded.

Resolving a dotted name of an allowed import to the object it names (and its canonical name), telling
where an object comes from, the banned objects by identity, and whether a class is a tensor class. Nothing
here imports torch or triton unless called.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import types
from collections.abc import Callable

from adaexplore.executor.policy._tables import (
    _BANNED_FUNCTION_MODULES,
    _BANNED_NAMES,
    _OBJECT_ROOTS,
    _REACHABLE_ROOTS,
    ALLOWED_IMPORTS,
)

Resolver = Callable[[str], "tuple[str, object] | None"]


def resolve_dotted(dotted: str) -> tuple[str, object] | None:
    """The object a dotted name of an allowed import names, with its canonical name: each module on the way
    is named by its own __name__, so torch.nn.quantized.modules.conv.ops reads torch.ops. Imports only the
    allowed modules (trusted code); None when the name does not resolve (the candidate fails on it itself).
    For the candidate's worker, which has torch and triton loaded; the caller's process has neither."""
    parts = dotted.split(".")
    start = next((i for i in range(len(parts), 0, -1) if ".".join(parts[:i]) in ALLOWED_IMPORTS), 0)
    if not start:
        return None
    value: object = importlib.import_module(".".join(parts[:start]))
    canonical = ".".join(parts[:start])
    for part in parts[start:]:
        try:
            value = getattr(value, part)
        except Exception:  # AttributeError, or a lazy attribute that fails to load
            return None
        canonical = value.__name__ if isinstance(value, types.ModuleType) else f"{canonical}.{part}"
    return canonical, value


def _origin(value: object) -> str | None:
    """Why an object reached through an allowed module is out of bounds (the module it comes from, or the
    modules it holds), or None when it is not."""
    if isinstance(value, dict) and any(
        isinstance(v, types.ModuleType) for v in itertools.islice(value.values(), 10_000)
    ):
        return "a dictionary of modules"
    if isinstance(value, type | types.FunctionType | types.BuiltinFunctionType | types.MethodType):
        module = getattr(value, "__module__", None)
    else:
        module = type(value).__module__
    if not isinstance(module, str):
        return None
    root = module.split(".")[0]
    if root in _REACHABLE_ROOTS or root in _OBJECT_ROOTS:
        return None
    return f"from the module {module}"


def _import_dotted(dotted: str) -> object | None:
    """The object a dotted name names. Under triton the longest module prefix is imported first: whether
    triton.tools.tensor_descriptor is an attribute of triton depends on what was imported before, and the
    table must not. Elsewhere only the root is imported (torch.utils.cpp_extension alone would pull in
    distutils and take most of a second)."""
    parts = dotted.split(".")
    longest = len(parts) if parts[0] == "triton" else 1
    for split in range(longest, 0, -1):
        try:
            value: object = importlib.import_module(".".join(parts[:split]))
        except Exception:  # not a module (an attribute), not installed, or not in this version
            continue
        try:
            for part in parts[split:]:
                value = getattr(value, part)
        except AttributeError:
            return None
        return value
    return None


@functools.cache
def _banned_objects() -> dict[int, str]:
    """The objects the banned names name, by identity (resolved where torch and triton are loaded): the same
    function re-exported by another module (torch.autograd.profiler_util.attrgetter is operator.attrgetter)
    is refused under any name."""
    found: dict[int, str] = {}
    for dotted in _BANNED_NAMES:
        value = _import_dotted(dotted)
        if value is None:  # not installed, or not in this version
            continue
        if not isinstance(value, int | float | str | bool | type(None)):
            found[id(value)] = dotted
    for module_name in _BANNED_FUNCTION_MODULES:
        try:
            module = importlib.import_module(module_name)
        except Exception:  # not in this version
            continue
        for value in vars(module).values():
            if callable(value) and getattr(value, "__module__", None) == module_name:
                found.setdefault(id(value), module_name)
    return found


def _is_tensor_class(resolved: tuple[str, object] | None) -> bool:
    """Whether a resolved name is torch.Tensor or a class derived from it (torch.nn.Buffer, the Parameters)."""
    value = resolved[1] if resolved is not None else None
    return isinstance(value, type) and any(
        f"{c.__module__}.{c.__qualname__}" in ("torch.Tensor", "torch._C.TensorBase") for c in value.__mro__
    )
