"""The policy's attribute rules against the module graph of the installed torch and triton.

A candidate reaches objects through attributes of the modules it may import. Walking every public
attribute that the rules let through, from every allowed import, must never arrive at a module that
touches the process, the files or the interpreter, nor at a banned function or module by a path that
neither the attribute-name rules, nor the worker's resolution of names to their canonical form (what
torch.nn.quantized.modules.conv.ops really is: torch.ops), nor its refusal of banned objects by identity
(torch.distributions.utils.update_wrapper is functools.update_wrapper) refuses.
"""

from __future__ import annotations

import ast
import importlib
import types
import warnings

import pytest

from adaexplore.executor.policy._check import (
    ALLOWED_IMPORTS,
    _banned_objects,
    attribute_refused,
    banned_name,
    check_policy,
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


# What triton.tools.tensor_descriptor holds, as reviewed for the allow-list (see ALLOWED_IMPORTS): a Triton that
# changes it must be reviewed again.
TENSOR_DESCRIPTOR_NAMES = {"Any", "List", "TensorDescriptor", "dataclass", "validate_block_shape"}


def _violations(source: str, *, resolved: bool) -> list[tuple[str, str]]:
    tree = ast.parse(source)
    found = check_policy(tree, resolve=resolve_dotted if resolved else None, source=source)
    return [(v.code, v.message) for v in found]


def test_the_tensor_descriptor_module_holds_what_was_reviewed() -> None:
    module = importlib.import_module("triton.tools.tensor_descriptor")
    assert {n for n in dir(module) if not n.startswith("_")} == TENSOR_DESCRIPTOR_NAMES
    assert "triton.tools.tensor_descriptor" in ALLOWED_IMPORTS


@pytest.mark.parametrize("resolved", [False, True], ids=["caller", "worker"])
@pytest.mark.parametrize(
    "source",
    [
        "from triton.tools.tensor_descriptor import TensorDescriptor\n"
        "def f(x):\n    return TensorDescriptor.from_tensor(x, [64, 32])\n",
        "import triton.tools.tensor_descriptor as td\ndef f(x):\n    return td.TensorDescriptor(x, [8], [1], [8])\n",
        "from triton.tools import tensor_descriptor\nD = tensor_descriptor.TensorDescriptor\n",
        "from triton.tools.tensor_descriptor import validate_block_shape, List, Any\n",
    ],
)
def test_the_tensor_descriptor_is_allowed(source: str, resolved: bool) -> None:
    assert _violations(source, resolved=resolved) == []


@pytest.mark.parametrize("resolved", [False, True], ids=["caller", "worker"])
@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        # the rest of triton.tools stays banned, however it is named
        ("import triton\nc = triton.tools.compile", "You cannot use triton.tools in a candidate, apart from its"),
        ("from triton.tools import disasm", "You cannot import triton.tools;"),
        ("import triton.tools.link", "You cannot import triton.tools.link;"),
        ("import triton.tools.tensor_descriptor\nD = triton.tools.tensor_descriptor.TensorDescriptor", "apart from"),
        # what the module imports for itself, and the dataclass's own machinery
        ("from triton.tools.tensor_descriptor import dataclass", "dataclass (it builds code from strings)"),
        ("import triton.tools.tensor_descriptor as td\nd = td.dataclass", "dataclass (it builds code from strings)"),
        (
            "from triton.tools.tensor_descriptor import TensorDescriptor\nf = TensorDescriptor.__dataclass_fields__",
            "You cannot use .__dataclass_fields__",
        ),
        ("import triton.tools.tensor_descriptor as td\nm = td", "You cannot use the module td as a value"),
    ],
)
def test_the_rest_of_triton_tools_stays_out_of_reach(source: str, fragment: str, resolved: bool) -> None:
    found = _violations(source, resolved=resolved)
    assert any(fragment in message for _, message in found), found
