"""Which names a candidate reads from a function's own scope, so that a builtin's name is judged by scope.

A parameter named `input` (as torch's autograd Functions name theirs) is a new name inside its function:
reading it there reads the argument, never the builtin. `function_scope_reads` finds every such read, by
Python's own rules: a name bound anywhere in a function (parameters, assignments, loop and `with` targets,
imports, nested definitions, handlers, pattern captures, `nonlocal`) is local to the whole function, and a
nested function or comprehension reads it from there, while a `global` declaration sends it to the module.
Class bodies and the module are left out on purpose: a name they bind is looked up in their namespace and
then in the builtins, so a read before the binding runs (or where it never runs) still reaches the builtin.
Defaults, decorators, annotations and the first iterable of a comprehension belong to the enclosing scope.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

_Function = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
_Comprehension = ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp


@dataclass
class _Scope:
    function: bool  # a function, lambda or comprehension (not the module or a class body)
    comprehension: bool = False
    bound: set[str] = field(default_factory=set)
    declared_global: set[str] = field(default_factory=set)


def _arguments(arguments: ast.arguments) -> list[str]:
    listed = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]
    return [arg.arg for arg in listed if arg is not None]


def _outer_parts(node: ast.AST) -> list[ast.AST]:
    """The parts of a definition that run in the scope around it."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        arguments = node.args
        annotations = [a.annotation for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]]
        annotations += [a.annotation for a in (arguments.vararg, arguments.kwarg) if a is not None]
        parts = [*node.decorator_list, *arguments.defaults, *arguments.kw_defaults, *annotations, node.returns]
    elif isinstance(node, ast.Lambda):
        parts = [*node.args.defaults, *node.args.kw_defaults]
    elif isinstance(node, ast.ClassDef):
        parts = [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]
    else:  # a comprehension: its first iterable
        parts = [node.generators[0].iter]  # type: ignore[attr-defined]
    return [part for part in parts if part is not None]


def _inner_parts(node: ast.AST) -> list[ast.AST]:
    """The parts of a definition that run in its own scope."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return list(node.body)
    if isinstance(node, ast.Lambda):
        return [node.body]
    generators: list[ast.comprehension] = node.generators  # type: ignore[attr-defined]
    parts: list[ast.AST] = []
    for index, generator in enumerate(generators):
        parts += [generator.target, *generator.ifs] + ([generator.iter] if index else [])
    if isinstance(node, ast.DictComp):
        return [*parts, node.key, node.value]
    return [*parts, node.elt]  # type: ignore[attr-defined]


def _bindings(parts: list[ast.AST], scope: _Scope) -> None:
    """Fill `scope` with the names its own code binds, not looking into nested scopes (whose names and
    outer parts are bound and run here, and whose `:=` targets in comprehensions bind here)."""
    stack = list(parts)
    while stack:
        node = stack.pop()
        if isinstance(node, _Function | ast.ClassDef | _Comprehension):
            if not isinstance(node, ast.Lambda | _Comprehension):
                scope.bound.add(node.name)
            stack += _outer_parts(node)
            if isinstance(node, _Comprehension) and not scope.comprehension:
                # a walrus in a comprehension binds in the function or class around it
                stack += [n.target for n in ast.walk(node) if isinstance(n, ast.NamedExpr)]
            continue
        if isinstance(node, ast.NamedExpr) and scope.comprehension:
            stack.append(node.value)
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            scope.bound.add(node.id)
        elif isinstance(node, ast.alias):
            scope.bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            scope.bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            scope.bound.add(node.rest)
        elif isinstance(node, ast.Nonlocal):
            scope.bound.update(node.names)
        elif isinstance(node, ast.Global):
            scope.declared_global.update(node.names)
        stack += ast.iter_child_nodes(node)
    scope.bound -= scope.declared_global


def _reads_local(name: str, chain: list[_Scope]) -> bool:
    # innermost first; a class body binds nothing definite (see the module's docstring), so it is passed over
    for scope in reversed(chain):
        if name in scope.declared_global:
            return False
        if scope.function and name in scope.bound:
            return True
    return False


def function_scope_reads(tree: ast.AST) -> set[int]:
    """The ids of the Name nodes that read a name bound in a function's (or comprehension's) own scope, or a
    function's around it: reads that can never reach a builtin of the same name."""
    found: set[int] = set()

    def walk(parts: list[ast.AST], chain: list[_Scope]) -> None:
        stack = list(parts)
        while stack:
            node = stack.pop()
            if isinstance(node, _Function | ast.ClassDef | _Comprehension):
                stack += _outer_parts(node)
                inner = _Scope(
                    function=not isinstance(node, ast.ClassDef), comprehension=isinstance(node, _Comprehension)
                )
                if isinstance(node, _Function):
                    inner.bound.update(_arguments(node.args))
                _bindings(_inner_parts(node), inner)
                walk(_inner_parts(node), [*chain, inner])
                continue
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and _reads_local(node.id, chain):
                found.add(id(node))
            stack += ast.iter_child_nodes(node)

    module = _Scope(function=False)
    walk(list(ast.iter_child_nodes(tree)), [module])
    return found
