"""The policy's method-detour checks: methods read through their class, or otherwise away from an instance.

A method's first parameter (self, cls, ctx) is trusted only while the method is called on an instance of
the candidate's class; `_DetourChecks` refuses the reads, decorators, class-body uses and bases that would
hand such a method any other object.
"""

from __future__ import annotations

import ast
import builtins

from adaexplore.executor.policy._base import _CheckerBase
from adaexplore.executor.policy._facts import _class_scope_names, _is_kernel, _named_decorator, _trusted_first
from adaexplore.executor.policy._tables import _AUTOGRAD_METHODS, _DETOUR_ADVICE, _METHOD_DECORATORS, _PROPERTY_PARTS
from adaexplore.executor.policy._tables_attrs import _BUILTIN_NAMES


class _DetourChecks(_CheckerBase):
    # methods read through their class -------------------------------------------------------------
    def _super_binds(self, call: ast.Call) -> bool:
        """Whether super(...) here is bound to the instance a plain method was called on, so that the methods
        read from it are bound too (in a classmethod, or any function but a method, they are not)."""
        function = self._functions[-1] if self._functions else None
        if not isinstance(function, ast.FunctionDef) or id(function) not in self._methods:
            return False
        if _trusted_first(function) != "self" or any(
            _named_decorator(function, name, self.bound) for name in ("classmethod", "staticmethod")
        ):
            return False
        return not call.args or (
            len(call.args) == 2 and isinstance(call.args[1], ast.Name) and call.args[1].id == "self"
        )

    def _class_of(self, node: ast.expr) -> tuple[str, set[str]] | None:
        """(how to name it, its methods that must not be read from it) when `node` is a class of the module's
        own, or may be one: cls, type(x), super() where it is not bound to an instance."""
        if isinstance(node, ast.Name) and node.id in self._classes:
            return node.id, self._classes[node.id].methods
        if isinstance(node, ast.Name) and node.id in self._flow.holders:
            held = sorted(self._flow.holders[node.id])
            methods: set[str] = set().union(*(self._classes[c].methods for c in held))
            return f"{node.id}, which may hold the class {' or '.join(held)},", methods
        if isinstance(node, ast.Name) and node.id == "cls":
            return "cls", self._any_methods
        if isinstance(node, ast.Attribute) and node.attr in self._classes:
            return node.attr, self._classes[node.attr].methods
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id not in self.bound:
            if node.func.id == "type":
                return "type(...)", self._any_methods
            if node.func.id == "super" and not self._super_binds(node):
                return "super() outside a plain method", self._any_methods
        return None

    def _check_detour(self, node: ast.AST, value: ast.expr, name: str) -> None:
        found = self._class_of(value)
        if found is not None and name in found[1]:
            self._add(
                node,
                "method_detour",
                f"You cannot read the method {name} through {found[0]}: a method read through its class takes "
                f"any object as self, which the rules trust as your own. Instead, "
                + _DETOUR_ADVICE.format(name=name)
                + ".",
            )

    def _check_class_value(self, node: ast.Name) -> None:
        if id(node) in self._bases or id(node) in self._called or id(node) in self._class_uses:
            return
        if id(node) in self._flow.passes:  # handed to the module's own function or class, or bound to a name
            return
        held = self._flow.holders.get(node.id) if node.id not in self._classes else None
        if node.id == "cls" or (node.id in self._classes and self._classes[node.id].methods) or held:
            what = f"the class {node.id}"
            if held:
                what = f"{node.id}, which may hold the class {' or '.join(sorted(held))},"
            self._add(
                node,
                "method_detour",
                f"You cannot use {what} as a value here: whatever receives it could call its methods with any "
                f"object as self. Create instances ({node.id}(...)), read its constants ({node.id}.NAME), test with "
                f"isinstance(x, {node.id}), bind it to a plain name or hand it to a function, method or class of your "
                "module; call the method on an instance of your class.",
            )

    def _allowed_decorator(self, decorator: ast.expr, properties: set[str]) -> bool:
        if (
            isinstance(decorator, ast.Attribute)
            and decorator.attr in _PROPERTY_PARTS
            and isinstance(decorator.value, ast.Name)
            and decorator.value.id in properties
        ):
            return True  # @x.setter
        target, arguments = decorator, []
        if isinstance(decorator, ast.Call):
            target, arguments = decorator.func, [*decorator.args, *(k.value for k in decorator.keywords)]
        if isinstance(target, ast.Name) and target.id not in self.bound and target.id in _METHOD_DECORATORS:
            name: str | None = target.id
        else:
            name = self._resolve(target)
        if name not in _METHOD_DECORATORS:
            return False
        # arguments of imports and builtins only: functools.partial(f) would hand the function to f
        return all(
            not isinstance(n, ast.Name) or n.id in self.aliases or (n.id not in self.bound and n.id in _BUILTIN_NAMES)
            for argument in arguments
            for n in ast.walk(argument)
        )

    def _check_methods(self, node: ast.ClassDef) -> None:
        info = self._classes.get(node.name)
        methods = [item for item in node.body if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)]
        plain = {item.name for item in methods if _trusted_first(item) and not _is_kernel(item, self.aliases)}
        for item in methods:
            first = _trusted_first(item)
            if first is None or _is_kernel(item, self.aliases):
                continue
            for decorator in item.decorator_list:
                if not self._allowed_decorator(decorator, plain):
                    self._add(
                        decorator,
                        "method_detour",
                        f"You cannot decorate the method {item.name} with {ast.unparse(decorator)}: a decorator "
                        f"receives the bare function, which takes any object as {first}. Use @staticmethod, "
                        "@classmethod, @property, functools' caches or torch.no_grad(), or call your helper "
                        "inside the method.",
                    )
            autograd = info is not None and info.autograd and item.name in _AUTOGRAD_METHODS
            if _named_decorator(item, "staticmethod", self.bound) and not autograd:
                self._add(
                    item,
                    "method_detour",
                    f"You cannot name the first parameter of the static method {item.name} {first}: a static method "
                    "takes any object there, and the rules trust that name as your own object. Rename it (only "
                    "forward and backward of a torch.autograd.Function take ctx).",
                )
        # at class level a method is the bare function (`alias = go`, `staticmethod(go)`)
        skip = {
            id(d.value)
            for item in methods
            for d in item.decorator_list
            if isinstance(d, ast.Attribute) and d.attr in _PROPERTY_PARTS
        }
        for statement in node.body:
            for name in _class_scope_names(statement, skip):
                if isinstance(name.ctx, ast.Load) and name.id in plain:
                    self._add(
                        name,
                        "method_detour",
                        f"You cannot use the method {name.id} as a value in the body of class {node.name}: there it "
                        f"is the bare function, which takes any object as self. Instead, "
                        + _DETOUR_ADVICE.format(name=name.id)
                        + ".",
                    )

    def _named_base(self, node: ast.expr) -> bool:
        """A base class named as an import, a class of the module or a builtin class (not computed)."""
        if isinstance(node, ast.Name):
            if node.id in self.aliases or node.id in self._classes:
                return True
            # `type` among them: it has a rule of its own
            return node.id not in self.bound and isinstance(getattr(builtins, node.id, None), type)
        if isinstance(node, ast.Attribute):
            return self._resolve(node) is not None or (node.attr in self._classes and self._named_base(node.value))
        if isinstance(node, ast.Subscript):
            return self._named_base(node.value)
        if isinstance(node, ast.Call):  # collections.namedtuple(...)
            return self._resolve(node.func) is not None
        return False
