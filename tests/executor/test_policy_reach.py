"""The policy's attribute rules against the module graph of the installed torch and triton.

A candidate reaches objects through attributes of the modules it may import. Walking every public
attribute that the rules let through, from every allowed import, must never arrive at a module that
touches the process, the files or the interpreter, nor at a banned function or module by a path that
neither the attribute-name rules, nor the worker's resolution of names to their canonical form (what
torch.nn.quantized.modules.conv.ops really is: torch.ops), nor its refusal of banned objects by identity
(torch.distributions.utils.update_wrapper is functools.update_wrapper) refuses.
"""

from __future__ import annotations

import importlib
import types
import warnings

from adaexplore.executor._policy import (
    ALLOWED_IMPORTS,
    _banned_objects,
    attribute_refused,
    banned_name,
    resolve_dotted,
)

# Packages whose modules only compute: reaching them is harmless, and their own attributes are walked too.
COMPUTING = {
    "torch",
    "triton",
    "math",
    "cmath",
    "numbers",
    "operator",
    "typing",
    "typing_extensions",
    "abc",
    "_collections_abc",
    "collections",
    "dataclasses",
    "enum",
    "functools",
    "itertools",
    "copy",
    "keyword",
    "re",
    "sre_compile",
    "sre_parse",
    "sre_constants",
    "string",
    "textwrap",
    "warnings",
    "contextlib",
    "bisect",
    "heapq",
    "struct",
    "difflib",
    "fnmatch",
    "json",
    "hashlib",
    "base64",
    "binascii",
    "datetime",
    "ast",
    "contextvars",
    "errno",
    "locale",
    "random",
    "statistics",
    "decimal",
    "fractions",
    "uuid",
    "reprlib",
    "pprint",
    "stat",
    "token",
    "tokenize",
    "_weakrefset",
}


def _walk() -> list[str]:
    """Each way out of bounds the rules leave open, as 'path -> what it reaches'."""
    banned = _banned_objects()
    assert banned, "the banned names resolve to no object: the identity check would refuse nothing"
    leaks: list[str] = []
    seen: set[int] = set()
    queue: list[tuple[str, types.ModuleType]] = []
    for name in sorted(ALLOWED_IMPORTS - {"__future__"}):
        queue.append((name, importlib.import_module(name)))
    while queue:
        path, module = queue.pop(0)
        if id(module) in seen:
            continue
        seen.add(id(module))
        for name in sorted(dir(module)):
            if attribute_refused(name, owned=False):
                continue
            dotted = f"{path}.{name}"
            if banned_name(dotted):
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    value = getattr(module, name)
            except Exception:  # a lazy attribute that fails to load is not reachable either
                continue
            resolved = resolve_dotted(dotted)
            canonical = resolved[0] if resolved else dotted
            if banned_name(canonical):
                continue  # the worker refuses it under its canonical name
            if id(value) in banned and not isinstance(value, types.ModuleType | type):
                continue  # the worker refuses a banned object by identity, under any name
            if not isinstance(value, types.ModuleType):
                continue
            if value.__name__.split(".")[0] not in COMPUTING:
                leaks.append(f"{dotted} -> module {value.__name__}")
            else:
                queue.append((dotted, value))
    return leaks


def test_no_public_attribute_path_leads_out_of_bounds() -> None:
    leaks = _walk()
    assert not leaks, "attribute paths the policy lets through:\n" + "\n".join(leaks[:60])
