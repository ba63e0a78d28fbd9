"""Where the candidate's own classes go as values.

The rules trust a method's `self` only while the method is called on an instance, so a class with such methods may
not be handed around: whatever receives it could read a method through it (`kind.swap(obj, ...)`) and call it with
any object as self. Plain models hand a class to their own builders all the same (ResNet's
`self._make_layer(BasicBlock, 64, 2)`, Swin's `BasicLayer(..., downsample=PatchMerging)`), and those builders only
create instances of it and read its constants (`block.expansion`).

`class_flow` follows a class to the names that may hold it, over the whole module and scope-blind, to a fixed
point: a plain assignment to a name (`block = Bottleneck`), and an argument (positional, or by keyword) of a call of
a function, method or class the module defines, which binds the parameter it lands in. A conditional expression
passes its branches on (`PatchMerging if last else None`). The checker then treats each such name as it treats the
class itself: a method read through it is a detour, and it may stand as a value only in the same places. Anything
else (a container, a return, an attribute, a default, a call of anything but the module's own functions and
classes, a parameter caught by `*args` or `**kwargs`) is refused as before. Scope-blindness errs on the safe side: a
name that holds a class anywhere is such a name everywhere.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from adaexplore.executor.policy._facts import _ClassInfo, _named_decorator

__all__ = ["ClassFlow", "class_flow"]


@dataclass
class ClassFlow:
    holders: dict[str, set[str]] = field(default_factory=dict)  # a name -> the module's classes it may hold
    passes: set[int] = field(default_factory=set)  # Name nodes where a class stands in a place it may


@dataclass
class _Module:
    functions: dict[str, list[ast.FunctionDef]]  # defined outside class bodies, by name
    methods: dict[str, list[ast.FunctionDef]]  # defined in class bodies, by name
    classes: dict[str, list[ast.ClassDef]]
    bound: set[str]


def _index(tree: ast.AST, bound: set[str]) -> _Module:
    module = _Module({}, {}, {}, bound)
    members: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            module.classes.setdefault(node.name, []).append(node)
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    members.add(id(item))
                    module.methods.setdefault(item.name, []).append(item)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and id(node) not in members:
            module.functions.setdefault(node.name, []).append(node)
    return module


def _init_of(module: _Module, name: str, seen: frozenset[str] = frozenset()) -> list[ast.FunctionDef] | None:
    """The `__init__` methods a call of the module's class `name` runs first (its own, else its module bases'); None
    where one of them is not the module's (nn.Module's own, say)."""
    found: list[ast.FunctionDef] = []
    for cls in module.classes.get(name, []):
        own = [item for item in cls.body if isinstance(item, ast.FunctionDef) and item.name == "__init__"]
        if own:
            found += own
            continue
        parents = [b.id for b in cls.bases if isinstance(b, ast.Name) and b.id in module.classes and b.id not in seen]
        if len(parents) != 1:
            return None
        inherited = _init_of(module, parents[0], seen | {name})
        if inherited is None:
            return None
        found += inherited
    return found or None


def _targets(call: ast.Call, module: _Module, holders: dict[str, set[str]]) -> list[tuple[ast.FunctionDef, int]] | None:
    """The module's functions a call runs, each with how many of its leading parameters the call does not fill
    (self); None where the call runs anything else."""
    func = call.func
    if isinstance(func, ast.Name) and func.id in module.functions:
        return [(f, 0) for f in module.functions[func.id]]
    if isinstance(func, ast.Name) and (func.id in module.classes or func.id in holders):
        inits: list[ast.FunctionDef] = []
        for name in [func.id] if func.id in module.classes else sorted(holders[func.id]):
            found = _init_of(module, name)
            if found is None:
                return None
            inits += found
        return [(f, 1) for f in inits]
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
        methods = module.methods.get(func.attr)
        if not methods:
            return None
        return [(f, 0 if _named_decorator(f, "staticmethod", module.bound) else 1) for f in methods]
    return None


def _parameter(function: ast.FunctionDef, skip: int, index: int | None, keyword: str | None) -> str | None:
    """The parameter an argument binds (by position `index`, or by `keyword`), or None where it is caught by *args
    or **kwargs, or binds nothing."""
    arguments = function.args
    if keyword is not None:
        named = [a.arg for a in [*arguments.args[skip:], *arguments.kwonlyargs]]
        return keyword if keyword in named else None
    positional = [*arguments.posonlyargs, *arguments.args][skip:]
    return positional[index].arg if index is not None and index < len(positional) else None


def _flowing(expr: ast.expr) -> list[ast.Name]:
    """The names an expression evaluates to as a whole: itself, or the branches of a conditional expression."""
    if isinstance(expr, ast.Name):
        return [expr]
    if isinstance(expr, ast.IfExp):
        return _flowing(expr.body) + _flowing(expr.orelse)
    return []


def class_flow(tree: ast.AST, classes: dict[str, _ClassInfo], bound: set[str]) -> ClassFlow:
    """Which names may hold the module's classes that have trusted methods, and where such a class (or a name that
    may hold one) stands in a place it may. See the module's docstring."""
    module = _index(tree, bound)
    guarded = {name for name, info in classes.items() if info.methods}
    flow = ClassFlow()
    if not guarded:
        return flow

    def held(names: list[ast.Name]) -> tuple[set[str], list[ast.Name]]:
        found: set[str] = set()
        carriers = []
        for name in names:
            if name.id in guarded:
                found.add(name.id)
            elif name.id in flow.holders:
                found |= flow.holders[name.id]
            else:
                continue
            carriers.append(name)
        return found, carriers

    def bind(target: str, found: set[str], carriers: list[ast.Name]) -> bool:
        flow.passes.update(id(c) for c in carriers)
        before = flow.holders.get(target, set())
        if found <= before:
            return False
        flow.holders[target] = before | found
        return True

    assignments = [n for n in ast.walk(tree) if isinstance(n, ast.Assign)]
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    changed = True
    while changed:
        changed = False
        for node in assignments:
            found, carriers = held(_flowing(node.value))
            if found and all(isinstance(t, ast.Name) for t in node.targets):
                for target in node.targets:
                    changed |= bind(target.id, found, carriers)  # type: ignore[attr-defined]
        for call in calls:
            passed: list[tuple[int | None, str | None, ast.expr]] = []
            for position, argument in enumerate(call.args):
                if isinstance(argument, ast.Starred):
                    break
                passed.append((position, None, argument))
            passed += [(None, k.arg, k.value) for k in call.keywords if k.arg is not None]
            for index, keyword, value in passed:
                found, carriers = held(_flowing(value))
                if not found:
                    continue
                targets = _targets(call, module, flow.holders)
                names = [_parameter(f, skip, index, keyword) for f, skip in targets or []]
                if targets and all(names):
                    for name in names:
                        changed |= bind(name, found, carriers)  # type: ignore[arg-type]
    return flow
