"""The state of the policy checker, and the checks every part of it shares.

`_CheckerBase` holds what the checker learns while it walks a module (aliases, derived names, classes,
the nodes seen as bases, calls and class uses) and the checks of names against the tables: dotted names,
imported modules, the real objects behind names, rebinding of defined names and trusted roots.
"""

from __future__ import annotations

import ast
import types

from adaexplore.executor.policy._class_flow import class_flow
from adaexplore.executor.policy._facts import _import_aliases, _module_classes, _module_names
from adaexplore.executor.policy._grants import NO_GRANTS, TaskGrants, granted_refusal
from adaexplore.executor.policy._reach import Resolver, _banned_objects, _origin
from adaexplore.executor.policy._rules import Violation, banned_name
from adaexplore.executor.policy._scope import function_scope_reads
from adaexplore.executor.policy._tables import _BANNED_NAMES, _REACHABLE_ROOTS, ALLOWED_IMPORTS
from adaexplore.executor.policy._tables_attrs import _OWN_ROOTS


class _CheckerBase(ast.NodeVisitor):
    def __init__(
        self,
        tree: ast.AST,
        resolve: Resolver | None = None,
        source: str | None = None,
        grants: TaskGrants = NO_GRANTS,
    ) -> None:
        self.resolve = resolve
        self.grants = grants
        self.allowed = ALLOWED_IMPORTS | grants.modules  # the policy's imports, and the modules the task grants
        self._lines = source.splitlines() if source is not None else None
        self._in_fstring: set[int] = set()
        self._methods: set[int] = set()  # functions defined directly in a class body
        self._resolved: dict[str, tuple[str, object] | None] = {}
        self._called: set[int] = set()  # nodes that are the function of a call
        self._bare_calls: set[int] = set()  # nodes that are the function of a call without arguments
        self.violations: list[Violation] = []
        # import alias -> dotted module or object name ("tl" -> "triton.language")
        self.aliases: dict[str, str] = {}
        # names bound to a plain attribute chain of an import (`T = torch.Tensor`): assigning into them is
        # assigning into the module
        self.derived: dict[str, str] = {}
        self._called_getattr: set[int] = set()
        self._bases: set[int] = set()  # nodes that are the object of an attribute access
        self._type_calls: set[int] = set()  # `type` names called with one argument, the one use allowed
        # names the module binds, and those of the classes and functions it defines (see _module_names)
        self.bound, self.defined = _module_names(tree)
        self._classes = _module_classes(tree, _import_aliases(tree), self.bound)
        self._any_methods: set[str] = set().union(*(c.methods for c in self._classes.values()))
        # the names that may hold those classes, and where a class may stand as a value (see _class_flow)
        self._flow = class_flow(tree, self._classes, self.bound)
        self._class_uses: set[int] = set()  # names of classes where a class may stand (isinstance, except ...)
        self._functions: list[ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda] = []
        self._kernel_depth = 0  # inside a Triton kernel, which nothing calls as a method
        # reads of names a function binds itself (a parameter named input): never the builtin of that name
        self._function_reads = function_scope_reads(tree)

    def _builtin(self, node: ast.expr, name: str) -> bool:
        """`node` reads the builtin `name`: not an import under that name, nor a name its function binds."""
        return (
            isinstance(node, ast.Name)
            and node.id == name
            and name not in self.aliases
            and id(node) not in self._function_reads
        )

    def _add(self, node: ast.AST, code: str, message: str) -> None:
        self.violations.append(Violation(code, message, getattr(node, "lineno", 0)))

    def _check_module(self, node: ast.AST, module: str) -> None:
        if module not in self.allowed:
            allowed = ", ".join(sorted(m for m in self.allowed if "." not in m))
            self._add(
                node,
                "import",
                f"You cannot import {module}; a candidate may import only {allowed} "
                "(and torch.nn, torch.nn.functional, triton.language, libdevice, collections.abc and "
                "triton.tools.tensor_descriptor; numpy and einops where the task itself imports them).",
            )

    # names ---------------------------------------------------------------------------------------
    def _resolve(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self._resolve(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def _check_dotted(self, node: ast.AST, dotted: str) -> None:
        message = banned_name(dotted) or granted_refusal(dotted, self.grants)
        if message:
            self._add(node, "banned_api", message)

    def _check_real(self, node: ast.expr, dotted: str) -> None:
        """The checks that need the real objects (see check_policy)."""
        if self.resolve is None:
            return
        if dotted not in self._resolved:
            self._resolved[dotted] = self.resolve(dotted)
        resolved = self._resolved[dotted]
        if resolved is None:
            return
        canonical, value = resolved
        if canonical != dotted and banned_name(canonical):
            self._add(node, "banned_api", f"{banned_name(canonical)} ({dotted} is {canonical})")
        elif id(value) in _banned_objects() and not banned_name(dotted):
            same = _banned_objects()[id(value)]
            self._add(node, "banned_api", f"{_BANNED_NAMES[same]} ({dotted} is {same})")
        elif isinstance(value, type) and issubclass(value, type):
            self._add(
                node, "banned_api", f"You cannot use {dotted}; it is a metaclass, which makes classes from strings."
            )
        elif not isinstance(value, types.ModuleType):
            origin = _origin(value)
            if origin is not None:
                self._add(
                    node,
                    "module_reach",
                    f"You cannot use {dotted} ({origin}); it reaches the process, files or interpreter, which "
                    "belong to the evaluator.",
                )
        if isinstance(value, types.ModuleType):
            if canonical.split(".")[0] not in _REACHABLE_ROOTS:
                self._add(
                    node,
                    "module_reach",
                    f"You cannot use {dotted} (the module {canonical}); it reaches the process, files or "
                    "interpreter, which belong to the evaluator.",
                )
            elif id(node) not in self._bases and id(node) not in self._called:
                self._add(
                    node,
                    "module_value",
                    f"You cannot use the module {dotted} as a value; use its attributes directly, as {dotted}.name.",
                )

    def _allow_class(self, node: ast.expr | None) -> None:
        for item in node.elts if isinstance(node, ast.Tuple) else [node]:
            if isinstance(item, ast.Name):
                self._class_uses.add(id(item))

    def _owned(self, value: ast.expr) -> bool:
        # a kernel is never called as a method: a `self` it reads from around it may be anything
        return not self._kernel_depth and isinstance(value, ast.Name) and value.id in ("self", "cls")

    def _check_rebinding(self, node: ast.AST, name: str) -> None:
        """Attributes may be set on the classes and functions the module defines; a parameter or a variable
        of the same name would bring that trust to any object (`def f(Helper): Helper.x = ...`)."""
        if name in self.defined:
            self._add(
                node,
                "monkey_patch",
                f"You cannot bind {name} to another value; it names a class or function the module defines.",
            )

    def _check_own_root(self, node: ast.AST, name: str | None) -> None:
        if name in _OWN_ROOTS:
            self._add(
                node,
                "monkey_patch",
                f"You cannot bind {name} to another value; the rules trust that name as a method's own object.",
            )

    def _chain_origin(self, value: ast.expr) -> str | None:
        """The import a plain chain of attributes and subscripts starts from, if it starts from one."""
        root = value
        while isinstance(root, ast.Attribute | ast.Subscript):
            root = root.value
        if isinstance(root, ast.Name):
            return self.aliases.get(root.id) or self.derived.get(root.id)
        return None

    def _allow_annotation(self, node: ast.expr | None) -> None:
        # an annotation is read back only through __annotations__ and typing's evaluators, both refused
        for item in ast.walk(node) if node is not None else ():
            if isinstance(item, ast.Name):
                self._class_uses.add(id(item))
