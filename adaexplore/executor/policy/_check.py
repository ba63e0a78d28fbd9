"""Static checks of a candidate's source, done in the caller's process without importing it.

The candidate runs in a worker process that also holds the measuring code. These rules keep the
candidate from reaching that code (introspection, monkey-patching, threads, other processes, files,
side streams), so the numbers the worker reports are the numbers it measured. Each rule is one
(code, message) pair; the message is the sentence a model reads.

This module is the policy's entry point: `check_policy`, `guard_own_roots` (the worker's run-time guard
of trusted roots) and the names other modules use, re-exported from where they live (see the room's
`__init__` for the map of its modules).
"""

from __future__ import annotations

import ast

from adaexplore.executor.policy._facts import _import_aliases, _is_kernel, defines_model_new
from adaexplore.executor.policy._grants import NO_GRANTS, TaskGrants, task_grants
from adaexplore.executor.policy._reach import Resolver

# the next three: importable from here as before the split (the worker and tests use them), not in __all__
from adaexplore.executor.policy._reach import _banned_objects as _banned_objects
from adaexplore.executor.policy._reach import _origin as _origin
from adaexplore.executor.policy._reach import resolve_dotted as resolve_dotted
from adaexplore.executor.policy._rules import Violation, attribute_refused, banned_name, needs_owner
from adaexplore.executor.policy._tables import ALLOWED_IMPORTS
from adaexplore.executor.policy._tables_attrs import _OWN_ROOTS
from adaexplore.executor.policy._visit_stmts import _Checker

__all__ = [
    "ALLOWED_IMPORTS",
    "NO_GRANTS",
    "TaskGrants",
    "Violation",
    "attribute_refused",
    "banned_name",
    "check_policy",
    "defines_model_new",
    "guard_own_roots",
    "needs_owner",
    "task_grants",
]


class _OwnRootGuard(ast.NodeTransformer):
    """Puts `guard(root, "attr")` in place of a trusted root (self, cls, ctx) wherever the rules trusted it:
    reading an attribute only owners may read, and setting or deleting attributes through it."""

    def __init__(self, guard: str, aliases: dict[str, str]) -> None:
        self.guard = guard
        self.aliases = aliases

    def _wrap(self, root: ast.Name, attr: str) -> ast.Call:
        call = ast.Call(
            func=ast.copy_location(ast.Name(id=self.guard, ctx=ast.Load()), root),
            args=[root, ast.copy_location(ast.Constant(value=attr), root)],
            keywords=[],
        )
        return ast.copy_location(call, root)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if isinstance(node.ctx, ast.Load):
            if isinstance(node.value, ast.Name) and node.value.id in _OWN_ROOTS and needs_owner(node.attr):
                node.value = self._wrap(node.value, node.attr)
        else:
            holder: ast.Attribute | ast.Subscript = node
            while isinstance(holder.value, ast.Attribute | ast.Subscript):
                holder = holder.value
            if isinstance(holder.value, ast.Name) and holder.value.id in _OWN_ROOTS:
                holder.value = self._wrap(holder.value, node.attr)
        self.generic_visit(node)
        return node

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        if not _is_kernel(node, self.aliases):
            self.generic_visit(node)
            return node
        # Triton reads a kernel's source from the file; only what runs around it is rewritten
        for field in ("decorator_list", "args", "returns"):
            value = getattr(node, field)
            if isinstance(value, list):
                setattr(node, field, [self.visit(item) for item in value])
            elif value is not None:
                setattr(node, field, self.visit(value))
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        return self._function(node)


def guard_own_roots(tree: ast.Module, guard: str) -> ast.Module:
    """`tree` with every use of a trusted root that the rules allow only on the candidate's own objects routed
    through the builtin named `guard` (called as guard(obj, attribute_name), returning obj), for the worker to
    check at run time what no static rule can see: which object a method was really called with. Positions
    (and so line numbers, tracebacks and Triton's reading of kernels from the file) are kept; the bodies of
    Triton's kernels are left as they are."""
    return _OwnRootGuard(guard, _import_aliases(tree)).visit(tree)


def check_policy(
    tree: ast.Module,
    resolve: Resolver | None = None,
    *,
    source: str | None = None,
    grants: TaskGrants = NO_GRANTS,
) -> list[Violation]:
    """Every rule the module breaks, in source order. With `resolve` (resolve_dotted, where torch and triton
    are loaded) names of allowed imports are also checked as what they are: a banned function reached under
    another module's name, a module outside the allowed packages, a module used as a value. With `source`
    (the text `tree` was parsed from) strings are checked line by line as they stand in the file. `grants`: what
    the candidate's task lets it use besides (`task_grants` of the task's source)."""
    checker = _Checker(tree, resolve, source, grants)
    checker.visit(tree)
    return sorted(checker.violations, key=lambda v: v.line)
