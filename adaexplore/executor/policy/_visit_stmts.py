"""The policy checker's visits of statements and bindings, completing it as `_Checker`.

Imports, exception handlers and pattern captures, assignments and deletions (mutation of other objects),
functions and their parameters, class definitions and `global`.
"""

from __future__ import annotations

import ast

from adaexplore.executor.policy._facts import _is_kernel
from adaexplore.executor.policy._reach import _is_tensor_class
from adaexplore.executor.policy._rules import attribute_refused
from adaexplore.executor.policy._tables import _PRIVATE_BUT_PLAIN
from adaexplore.executor.policy._tables_attrs import (
    _BUILTIN_NAMES,
    _DEFINABLE_DUNDERS,
    _OWN_ROOTS,
    _SETTABLE_ATTRS,
    _TENSOR_HOOKS,
)
from adaexplore.executor.policy._visit_exprs import _ExpressionChecks


class _Checker(_ExpressionChecks):
    # imports -------------------------------------------------------------------------------------
    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        self._check_own_root(node, node.name)
        self._allow_class(node.type)
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        self._check_own_root(node, node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        self._check_own_root(node, node.name)
        self.generic_visit(node)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        self._check_own_root(node, node.rest)
        self.generic_visit(node)

    def visit_alias(self, node: ast.alias) -> None:
        bound = node.asname or node.name.split(".")[0]
        self._check_own_root(node, bound)
        if bound.startswith("__") and bound.endswith("__") and bound != "__future__":
            self._add(node, "introspection", f"You cannot bind the name {bound}; special names belong to Python.")
        elif bound in _BUILTIN_NAMES:
            # `from typing import getattr` (which fails inside a try) would make every rule about the
            # builtin getattr look away from the name, while the name still is the builtin
            self._add(
                node,
                "import",
                f"You cannot import under the name {bound}, which is a Python builtin; import it as another name.",
            )

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.visit_alias(alias)
            self._check_module(node, alias.name)
            bound = alias.asname or alias.name.split(".")[0]
            self.aliases[bound] = alias.name if alias.asname else alias.name.split(".")[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self._add(node, "import", "You cannot use relative imports; a candidate is a single module.")
            return
        module = node.module or ""
        for alias in node.names:
            self.visit_alias(alias)
            full = f"{module}.{alias.name}"
            # `from torch import nn` imports a module; `from triton import jit` an object of an allowed one.
            if full in self.allowed or module in self.allowed:
                self._check_dotted(node, full)
                plain = alias.name == "*" or full in _PRIVATE_BUT_PLAIN
                refused = attribute_refused(alias.name, owned=False) if not plain else None
                if refused:  # `from torch import sys` reads torch.sys
                    self._add(node, *refused)
                self.aliases[alias.asname or alias.name] = full
            else:
                self._check_module(node, module)
            if alias.name == "*":
                self._add(node, "import", "You cannot use `import *`; import names explicitly.")

    # mutation of other objects -------------------------------------------------------------------
    def _check_target(self, target: ast.expr) -> None:
        if isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                self._check_target(element)
            return
        if isinstance(target, ast.Attribute | ast.Subscript):
            root: ast.expr = target
            while isinstance(root, ast.Attribute | ast.Subscript):
                root = root.value
            if isinstance(target, ast.Attribute) and target.attr.startswith("__") and target.attr.endswith("__"):
                # on whatever object: `self` may be any object a method is called with (M.install(torch.no_grad,
                # f) sets torch.no_grad.__enter__), and special methods are looked up on classes
                self._add(
                    target,
                    "monkey_patch",
                    f"You cannot set the special attribute {target.attr}; define methods in a class body.",
                )
            elif isinstance(root, ast.Name) and (root.id in self.aliases or root.id in self.derived):
                self._add(
                    target,
                    "monkey_patch",
                    f"You cannot assign into {self.aliases.get(root.id) or self.derived[root.id]}; modules and "
                    "their classes are shared with the evaluator.",
                )
            elif (
                isinstance(target, ast.Attribute)
                and isinstance(root, ast.Name)
                and (root.id not in _OWN_ROOTS or self._kernel_depth)
                and root.id not in self.defined
                and target.attr not in _SETTABLE_ATTRS
            ):
                # an attribute set on a tensor shadows torch's method for everyone who calls it (the evaluator's
                # detach, contiguous, untyped_storage ...)
                self._add(
                    target,
                    "monkey_patch",
                    f"You cannot set attributes of {root.id}; keep state on self (or on your own classes).",
                )
            elif isinstance(root, ast.Call) and isinstance(root.func, ast.Name) and root.func.id in ("type", "getattr"):
                self._add(
                    target,
                    "monkey_patch",
                    f"You cannot assign into what {root.func.id}() returns; classes and modules are shared "
                    "with the evaluator.",
                )

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._check_target(target)
        origin = self._chain_origin(node.value)
        for target in node.targets:
            if isinstance(target, ast.Name):
                if origin:
                    self.derived[target.id] = origin
                else:
                    self.derived.pop(target.id, None)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_target(node.target)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._check_target(node.target)
        self._allow_annotation(node.annotation)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._check_target(target)
        self.generic_visit(node)

    # functions -----------------------------------------------------------------------------------
    def _scoped(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        # A parameter is a new name inside the function (`x` of `def f(x)` is not a module-level `x`), and
        # what the body binds stays inside it.
        saved = dict(self.derived)
        arguments = node.args
        positional = [*arguments.posonlyargs, *arguments.args]
        for annotated in [*positional, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]:
            self._allow_annotation(annotated.annotation if annotated is not None else None)
        if not isinstance(node, ast.Lambda):
            self._allow_annotation(node.returns)
        kernel = _is_kernel(node, self.aliases)
        for arg in [*positional, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]:
            if arg is not None:
                self.derived.pop(arg.arg, None)
                self._check_rebinding(arg, arg.arg)
                if arg.arg in _OWN_ROOTS and kernel:
                    self._add(
                        arg,
                        "monkey_patch",
                        f"You cannot name a kernel's parameter {arg.arg}; a kernel is never called as a method, and "
                        "the rules trust that name as a method's own object.",
                    )
                elif arg.arg in _OWN_ROOTS and not (id(node) in self._methods and arg is positional[0]):
                    # the rules trust these names as the object a method is called on (its attributes may
                    # be set and its private ones read); anywhere else they could stand for any object
                    self._add(
                        arg,
                        "monkey_patch",
                        f"You cannot name a parameter {arg.arg} except the first parameter of a method in a class "
                        "body; the rules trust that name as the method's own object.",
                    )
        self._functions.append(node)
        self._kernel_depth += kernel
        try:
            self.generic_visit(node)
        finally:
            self._kernel_depth -= kernel
            self._functions.pop()
        self.derived = saved

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.name.startswith("__") and node.name.endswith("__") and node.name not in _DEFINABLE_DUNDERS:
            self._add(
                node,
                "introspection",
                f"You cannot define {node.name}; a class may define construction, calling, container, "
                "conversion, comparison and arithmetic methods only.",
            )
        self._scoped(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        # coroutines and async generators carry code objects and frames, and a kernel has no use for them
        self._add(node, "introspection", "You cannot define async functions; a kernel runs synchronously.")
        self._scoped(node)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._scoped(node)

    # classes -------------------------------------------------------------------------------------
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._check_methods(node)
        for base in node.bases:
            self._allow_class(base)
            if not (isinstance(base, ast.Name) and base.id in self.derived) and not self._named_base(base):
                self._add(
                    node,
                    "tensor_subclass",
                    f"You cannot derive from {ast.unparse(base)}; name the base class directly (nn.Module, "
                    "torch.autograd.Function) or derive from a class of your own.",
                )
            dotted = self._resolve(base)
            if isinstance(base, ast.Name) and base.id in self.derived:
                # `Base = torch.Tensor; class X(Base)`: the rules below would not see what the base is
                self._add(
                    node,
                    "tensor_subclass",
                    f"You cannot derive from {base.id}, a name bound to {self.derived[base.id]}'s objects; name "
                    "the base class directly (nn.Module) or derive from a class of your own.",
                )
            elif dotted in ("torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter") or (
                dotted and self.resolve is not None and _is_tensor_class(self.resolve(dotted))
            ):
                self._add(
                    node,
                    "tensor_subclass",
                    "You cannot subclass torch.Tensor; return plain tensors computed in forward.",
                )
        for keyword in node.keywords:
            self._add(
                node,
                "introspection",
                f"You cannot pass {keyword.arg or '**'}= to a class; metaclasses and class hooks belong to Python.",
            )
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name in _TENSOR_HOOKS:
                self._add(item, "tensor_subclass", f"You cannot define {item.name}; return plain tensors.")
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and not _is_kernel(item, self.aliases):
                self._methods.add(id(item))
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        for name in node.names:
            if name in self.aliases:
                self._add(node, "monkey_patch", f"You cannot rebind the imported name {name}.")
        self.generic_visit(node)
