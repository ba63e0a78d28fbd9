"""The policy checker's visits of expressions: attributes, names, calls, strings and class patterns."""

from __future__ import annotations

import ast
import builtins

from adaexplore.executor.policy._detour import _DetourChecks
from adaexplore.executor.policy._facts import _plain_format
from adaexplore.executor.policy._rules import attribute_refused
from adaexplore.executor.policy._tables import _BANNED_CALLS, _PRIVATE_BUT_PLAIN
from adaexplore.executor.policy._tables_attrs import (
    _ALLOWED_DUNDER_NAMES,
    _CALLED_BARE,
    _DEF_LINE,
    _FORMAT_METHODS,
    _FRAME_PREFIXES,
    _PLAIN_STRINGS,
    _SELF_MATCHING,
)


class _ExpressionChecks(_DetourChecks):
    def visit_Raise(self, node: ast.Raise) -> None:
        self._allow_class(node.exc)
        self._allow_class(node.cause)
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        for operand in [node.left, *node.comparators]:
            self._allow_class(operand)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._bases.add(id(node.value))
        dotted = self._resolve(node)
        if dotted:
            self._check_dotted(node, dotted)
            self._check_real(node, dotted)
        literal = node.value
        if node.attr in _FORMAT_METHODS and isinstance(literal, ast.Constant) and isinstance(literal.value, str):
            if not _plain_format(literal.value):
                self._add(
                    node,
                    "introspection",
                    "You cannot format with attribute or item fields ({0.name}, {0[key]}); use an f-string.",
                )
        elif dotted not in _PRIVATE_BUT_PLAIN and not (node.attr in _CALLED_BARE and id(node) in self._bare_calls):
            refused = attribute_refused(node.attr, owned=self._owned(node.value))
            if refused:
                self._add(node, *refused)
        self._check_detour(node, node.value, node.attr)
        self.generic_visit(node)

    def _check_def_lines(self, node: ast.Constant | ast.JoinedStr) -> None:
        """Triton reads a kernel's source text back from the file and cuts it at a line that starts with
        `def` (the compiler at the first one, the interpreter at the last one), so such a line inside a
        string would make it compile or run code this check never saw."""
        if self._lines is not None:
            inside = self._lines[node.lineno : node.end_lineno]  # the lines the string continues onto
        else:
            parts = node.values if isinstance(node, ast.JoinedStr) else [node]
            values = [p.value for p in parts if isinstance(p, ast.Constant)]
            text = "".join(v.decode("latin-1") if isinstance(v, bytes) else str(v) for v in values)
            inside = text.split("\n")[1:]
        if any(_DEF_LINE.match(line) for line in inside):
            self._add(
                node,
                "kernel_source",
                "You cannot write a line that starts with `def` inside a string: Triton finds a kernel's source "
                "by its def line, so the string would change what is compiled. Reword or drop the string.",
            )

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        self._check_def_lines(node)
        # its literal parts are checked with it (their positions are the f-string's on Python 3.11)
        self._in_fstring.update(id(part) for part in node.values if isinstance(part, ast.Constant))
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str | bytes) and id(node) not in self._in_fstring:
            self._check_def_lines(node)
        # Names as strings reach attributes through code that reads them for the candidate (a namespace
        # handed to a metaclass, co_names of a code object). A net, not a wall: strings built from pieces
        # pass it; the rules on what can read them are the wall.
        text = node.value
        if isinstance(text, str) and text.isidentifier() and text not in _PLAIN_STRINGS:
            if (text.startswith("__") and text.endswith("__")) or text.startswith(_FRAME_PREFIXES):
                self._add(node, "introspection", f"You cannot use the string {text!r}; it names an internal attribute.")

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        self._allow_class(node.cls)
        # `case C(attr=pattern)` reads attr of the subject: the same rules as `subject.attr`
        for name in node.kwd_attrs:
            refused = attribute_refused(name, owned=False)
            if refused:
                self._add(node, *refused)
        # `case C(x)` reads the attributes that C.__match_args__ names, whatever they are
        plain = isinstance(node.cls, ast.Name) and node.cls.id in _SELF_MATCHING and node.cls.id not in self.bound
        if node.patterns and not plain:
            self._add(
                node,
                "introspection",
                "You cannot use positional class patterns except on builtin types (case int(n)); use keyword "
                "patterns (case C(attr=x)).",
            )
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            self._check_rebinding(node, node.id)
            self._check_own_root(node, node.id)
        if isinstance(node.ctx, ast.Load) and node.id in _BANNED_CALLS and self._builtin(node, node.id):
            self._add(node, "banned_builtin", _BANNED_CALLS[node.id])
        if isinstance(node.ctx, ast.Load) and self._builtin(node, "getattr") and id(node) not in self._called_getattr:
            # handed on (functools.reduce(getattr, ...)), its name is no longer in sight
            self._add(node, "banned_builtin", "You cannot pass getattr around; use the attribute directly.")
        if isinstance(node.ctx, ast.Load) and self._builtin(node, "type") and id(node) not in self._type_calls:
            # as a base (`class M(type)`), an alias or an argument, it makes classes out of strings
            self._add(node, "banned_builtin", "You cannot use type except as type(x) with one argument.")
        if isinstance(node.ctx, ast.Load):
            self._check_class_value(node)
        if isinstance(node.ctx, ast.Load) and self._builtin(node, "super"):
            if id(node) not in self._called:
                self._add(node, "banned_builtin", "You cannot use super except as super().method(...).")
        if (
            isinstance(node.ctx, ast.Load)
            and node.id not in self.bound
            and not hasattr(builtins, node.id)
            and node.id not in _ALLOWED_DUNDER_NAMES
            and node.id not in self.grants.names
        ):
            # names that something else put into the module's namespace (Triton's interpreter puts its own
            # modules there) are not the candidate's to use
            self._add(
                node, "undefined_name", f"The name {node.id} is never defined in the module; define or import it."
            )
        if node.id == "__builtins__":
            self._add(node, "introspection", "You cannot use __builtins__.")
        elif node.id.startswith("__") and node.id.endswith("__") and node.id not in _ALLOWED_DUNDER_NAMES:
            # `__annotations__[...] = ...` or `for __torch_dispatch__ in ...` in a class body, and the like
            self._add(node, "introspection", f"You cannot use the name {node.id}; special names belong to Python.")
        if isinstance(node.ctx, ast.Load) and self.aliases.get(node.id) in self.allowed and id(node) not in self._bases:
            # A module handed around as a value (`t = torch`, `f(torch)`, `[torch][0]`) is out of sight of
            # every rule about its attributes; use it only as the start of an attribute, as `torch.relu`.
            self._add(
                node,
                "module_value",
                f"You cannot use the module {node.id} as a value; use its attributes directly, as {node.id}.name.",
            )
        elif isinstance(node.ctx, ast.Load) and node.id in self.aliases:
            self._check_real(node, self.aliases[node.id])
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        self._called.add(id(func))
        if not node.args and not node.keywords:
            self._bare_calls.add(id(func))
        builtin = func.id if isinstance(func, ast.Name) and func.id not in self.bound else None
        if builtin in ("getattr", "hasattr"):  # a method read by getattr has a rule of its own (_check_detour)
            self._allow_class(node.args[0] if node.args else None)
        if builtin in ("isinstance", "issubclass"):
            for argument in node.args[1:]:
                self._allow_class(argument)
        if builtin == "super":
            self._allow_class(node.args[0] if node.args else None)
            if node.args and not (
                len(node.args) == 2 and isinstance(node.args[1], ast.Name) and node.args[1].id == "self"
            ):
                self._add(
                    node,
                    "method_detour",
                    "You cannot call super with arguments other than (YourClass, self); write super().",
                )
        if isinstance(func, ast.Name) and func.id in self._classes and self._classes[func.id].autograd:
            self._add(
                node,
                "method_detour",
                f"You cannot create instances of the autograd Function {func.id}; call {func.id}.apply(...).",
            )
        if self._builtin(func, "type"):
            if len(node.args) > 1 or node.keywords:
                self._add(
                    node, "banned_builtin", "You cannot make classes with type(name, bases, namespace); write a class."
                )
            else:
                self._type_calls.add(id(func))
        name = node.args[1] if len(node.args) > 1 else None
        if builtin == "hasattr" and isinstance(name, ast.Constant) and isinstance(name.value, str):
            # it reads the attribute (running its getter) to answer
            refused = attribute_refused(name.value, owned=self._owned(node.args[0]))
            if refused:
                self._add(node, *refused)
        if self._builtin(func, "getattr"):
            self._called_getattr.add(id(func))
            name = node.args[1] if len(node.args) > 1 else None
            # a private name of the candidate's own object (getattr(self, "_cache", None)) is read as self._cache
            owned = bool(node.args) and self._owned(node.args[0])
            if not (
                isinstance(name, ast.Constant)
                and isinstance(name.value, str)
                and (owned or not name.value.startswith("_"))
            ):
                self._add(
                    node,
                    "banned_builtin",
                    "You cannot call getattr with a computed name, or a private one of an object other than self; "
                    "use the attribute directly.",
                )
            elif isinstance(name.value, str):
                # getattr(torch, "sys") is torch.sys, getattr(tb, "tb_frame") is tb.tb_frame
                refused = attribute_refused(name.value, owned=owned)
                if refused:
                    self._add(node, *refused)
                if node.args:
                    self._check_detour(node, node.args[0], name.value)
                base = self._resolve(node.args[0]) if node.args else None
                if base:
                    self._check_dotted(node, f"{base}.{name.value}")
                    self._check_real(node, f"{base}.{name.value}")
        self.generic_visit(node)
