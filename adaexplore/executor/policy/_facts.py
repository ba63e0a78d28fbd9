"""Helpers of the static policy that read a candidate's syntax tree, without judging it.

Import aliases, dotted names, which functions are Triton kernels, the module's classes and their trusted
methods, the names a class body reads, the names the module binds and defines, plain format strings, and
whether the module defines ModelNew.
"""

from __future__ import annotations

import ast
import string
from dataclasses import dataclass

from adaexplore.executor.policy._tables import _AUTOGRAD_BASES
from adaexplore.executor.policy._tables_attrs import _OWN_ROOTS


def defines_model_new(tree: ast.Module) -> bool:
    """True if the module binds the name ModelNew at top level (class, assignment or import)."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            return True
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "ModelNew" for t in targets):
                return True
    return False


@dataclass
class _ClassInfo:
    methods: set[str]  # its methods with a trusted first parameter, its own and those of the module's bases
    autograd: bool  # derives from torch.autograd.Function


def _import_aliases(tree: ast.AST) -> dict[str, str]:
    """Import alias -> dotted name, from every import in the module (the checker's own table fills in
    source order; the class tables need it before)."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                first = alias.name.split(".")[0]
                aliases[alias.asname or first] = alias.name if alias.asname else first
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def _dotted(node: ast.expr, aliases: dict[str, str]) -> str | None:
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value, aliases)
        return f"{base}.{node.attr}" if base else None
    return None


def _is_kernel(node: ast.AST, aliases: dict[str, str]) -> bool:
    """A function decorated by Triton (jit, autotune, heuristics): Triton compiles or interprets its source."""
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    for decorator in node.decorator_list:
        dotted = _dotted(decorator.func if isinstance(decorator, ast.Call) else decorator, aliases)
        if dotted and dotted.split(".")[0] == "triton":
            return True
    return False


def _trusted_first(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    positional = [*node.args.posonlyargs, *node.args.args]
    return positional[0].arg if positional and positional[0].arg in _OWN_ROOTS else None


def _named_decorator(node: ast.FunctionDef | ast.AsyncFunctionDef, name: str, bound: set[str]) -> bool:
    return name not in bound and any(isinstance(d, ast.Name) and d.id == name for d in node.decorator_list)


def _is_classmethod(node: ast.FunctionDef | ast.AsyncFunctionDef, bound: set[str]) -> bool:
    """The outermost decorator is the builtin classmethod: read through the class, cls is bound to it."""
    first = node.decorator_list[0] if node.decorator_list else None
    return isinstance(first, ast.Name) and first.id == "classmethod" and "classmethod" not in bound


def _module_classes(tree: ast.AST, aliases: dict[str, str], bound: set[str]) -> dict[str, _ClassInfo]:
    """The classes the module defines (at any depth, by name), with the methods that must not be read through
    the class: those whose first parameter the rules trust, classmethods (bound on the class) aside."""
    classes: dict[str, _ClassInfo] = {}
    bases: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        info = classes.setdefault(node.name, _ClassInfo(set(), False))
        for item in node.body:
            if (
                isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                and _trusted_first(item)
                and not _is_classmethod(item, bound)
                and not _is_kernel(item, aliases)
            ):
                info.methods.add(item.name)
        for base in node.bases:
            if isinstance(base, ast.Name | ast.Attribute):
                bases.setdefault(node.name, set()).add(base.id if isinstance(base, ast.Name) else base.attr)
            info.autograd |= _dotted(base, aliases) in _AUTOGRAD_BASES
    changed = True
    while changed:  # what a class inherits from the module's own classes
        changed = False
        for name, info in classes.items():
            for parent in bases.get(name, set()) & classes.keys():
                inherited = classes[parent]
                if not inherited.methods <= info.methods or (inherited.autograd and not info.autograd):
                    info.methods |= inherited.methods
                    info.autograd |= inherited.autograd
                    changed = True
    return classes


def _class_scope_names(node: ast.AST, skip: set[int]) -> list[ast.Name]:
    """The names read in the scope a class body runs in: its statements, and the decorators, defaults and bases
    of what it defines, not the bodies of its functions and nested classes (their own scopes)."""
    if isinstance(node, ast.Name):
        return [] if id(node) in skip else [node]
    children: list[ast.AST | None]
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        children = [*node.decorator_list, *node.args.defaults, *node.args.kw_defaults]
    elif isinstance(node, ast.Lambda):
        children = [*node.args.defaults, *node.args.kw_defaults]
    elif isinstance(node, ast.ClassDef):
        children = [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]
    else:
        children = list(ast.iter_child_nodes(node))
    return [name for child in children if child is not None for name in _class_scope_names(child, skip)]


def _plain_format(text: str) -> bool:
    """True if every field of a format string is empty, a number or a name: no attribute or item access,
    and no nested field in the spec."""
    try:
        fields = list(string.Formatter().parse(text))
    except ValueError:
        return False
    for _, field, spec, _ in fields:
        if field is None:
            continue
        if field and not (field.isdigit() or field.isidentifier()):
            return False
        if spec and ("{" in spec or "}" in spec):
            return False
    return True


def _module_names(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(bound, defined): every name the module binds anywhere (assignments, parameters, definitions, imports,
    handlers, patterns), and the names of the classes and functions it defines outside class bodies. Deliberately
    scope-blind: it only has to tell names the module defines from names it does not. A method is left out of
    `defined`: its name is an attribute of its class, never a variable the trust in defined names could pass to
    (a property `scale` beside a parameter `scale` is plain code)."""
    bound: set[str] = set()
    defined: set[str] = set()
    members = {
        id(item)
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        for item in node.body
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            (bound if id(node) in members else defined).add(node.name)
        elif isinstance(node, ast.alias):
            bound.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
        elif type(node).__name__ in ("TypeVar", "ParamSpec", "TypeVarTuple"):  # Python 3.12 type parameters
            bound.add(node.name)  # type: ignore[attr-defined]
    return bound | defined, defined
