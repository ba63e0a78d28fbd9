"""Static checks of a candidate's source, done in the caller's process without importing it.

The candidate runs in a worker process that also holds the measuring code. These rules keep the
candidate from reaching that code (introspection, monkey-patching, threads, other processes, files,
side streams), so the numbers the worker reports are the numbers it measured. Each rule is one
(code, message) pair; the message is the sentence a model reads.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

__all__ = ["ALLOWED_IMPORTS", "Violation", "check_policy", "defines_model_new"]

# Modules a candidate may import. Everything a Triton kernel needs, and nothing that reaches the
# process, the file system or the interpreter's internals.
ALLOWED_IMPORTS = frozenset(
    {
        "__future__",
        "abc",
        "collections",
        "dataclasses",
        "enum",
        "functools",
        "itertools",
        "math",
        "numbers",
        "operator",
        "typing",
        "torch",
        "torch.nn",
        "torch.nn.functional",
        "torch.nn.init",
        "triton",
        "triton.language",
        "triton.language.extra",
        "triton.language.extra.libdevice",
        "triton.language.extra.cuda",
        "triton.language.extra.cuda.libdevice",
        "triton.language.math",
    }
)

_BANNED_CALLS = {
    "exec": "You cannot call exec; write the code directly.",
    "eval": "You cannot call eval; write the code directly.",
    "compile": "You cannot call the builtin compile.",
    "__import__": "You cannot call __import__; use a plain import of an allowed module.",
    "globals": "You cannot call globals().",
    "locals": "You cannot call locals().",
    "vars": "You cannot call vars().",
    "open": "You cannot open files in a candidate.",
    "breakpoint": "You cannot call breakpoint().",
    "input": "You cannot read input in a candidate.",
    "setattr": "You cannot call setattr; assign attributes of self directly.",
    "delattr": "You cannot call delattr.",
    "exit": "You cannot call exit.",
    "quit": "You cannot call quit.",
}

# Dotted names (after resolving import aliases) that a candidate may not use.
_BANNED_NAMES = {
    "torch.compile": "You cannot use torch.compile; write the Triton kernels yourself.",
    "torch.cuda.Stream": "You cannot create CUDA streams; launch on the current stream.",
    "torch.cuda.stream": "You cannot switch CUDA streams; launch on the current stream.",
    "torch.cuda.set_stream": "You cannot switch CUDA streams; launch on the current stream.",
    "torch.cuda.ExternalStream": "You cannot use other CUDA streams; launch on the current stream.",
    "torch.Stream": "You cannot create streams; launch on the current stream.",
    "torch.backends": "You cannot use torch.backends settings (TF32, cuDNN); the evaluator fixes them.",
    "torch.set_float32_matmul_precision": "You cannot change the float32 matmul precision.",
    "torch.set_default_dtype": "You cannot change the default dtype.",
    "torch.set_default_device": "You cannot change the default device.",
    "torch.use_deterministic_algorithms": "You cannot change global torch settings.",
    "torch.set_num_threads": "You cannot change global torch settings.",
    "torch.set_flush_denormal": "You cannot change global torch settings.",
    "torch.set_grad_enabled": "You cannot change global torch settings.",
    "torch.library": "You cannot register torch operators.",
    "torch.utils.cpp_extension": "You cannot build C++/CUDA extensions; write Triton kernels.",
    "torch.multiprocessing": "You cannot start processes; do all work inside forward.",
    "torch.jit": "You cannot use torch.jit (fork runs work on other threads); write Triton kernels.",
    "torch.futures": "You cannot run work asynchronously; do all work inside forward.",
    "torch.distributed": "You cannot use torch.distributed in a candidate.",
    "torch.utils": "You cannot use torch.utils in a candidate.",
    "torch.ops": "You cannot call torch.ops directly; use public torch functions.",
    "triton.testing": "You cannot use triton.testing in a candidate.",
    "triton.runtime": "You cannot use triton.runtime internals; use @triton.jit and @triton.autotune.",
    "triton.knobs": "You cannot change Triton's settings.",
    "triton.backends": "You cannot use Triton's backend internals; use @triton.jit.",
    "triton.compiler": "You cannot call Triton's compiler directly; use @triton.jit.",
    "triton.tools": "You cannot use triton.tools in a candidate.",
    "torch.load": "You cannot read files in a candidate.",
    "torch.save": "You cannot write files in a candidate.",
    "torch.from_file": "You cannot read files in a candidate.",
    "torch.hub": "You cannot use torch.hub in a candidate.",
    "torch.package": "You cannot use torch.package in a candidate.",
    "torch.serialization": "You cannot use torch.serialization in a candidate.",
    "torch.classes": "You cannot use torch.classes in a candidate.",
    "torch.overrides": "You cannot intercept torch functions; return plain tensors computed in forward.",
    "torch.profiler": "You cannot use the profiler; the evaluator measures.",
    "torch.autograd.profiler": "You cannot use the profiler; the evaluator measures.",
    "torch.cuda.profiler": "You cannot use the profiler; the evaluator measures.",
    "torch.cuda.cudart": "You cannot call the CUDA runtime directly.",
    "operator.attrgetter": "You cannot use operator.attrgetter; use the attribute directly.",
    # these evaluate annotation strings as code
    "typing.get_type_hints": "You cannot evaluate annotations (typing.get_type_hints).",
    "typing.ForwardRef": "You cannot evaluate annotations (typing.ForwardRef).",
    "typing.evaluate_forward_ref": "You cannot evaluate annotations.",
    "functools.singledispatch": "You cannot use functools.singledispatch; call the function you mean.",
    "functools.singledispatchmethod": "You cannot use functools.singledispatchmethod; call the method you mean.",
    "torch.fx": "You cannot use torch.fx in a candidate; write Triton kernels.",
    "torch.export": "You cannot use torch.export in a candidate; write Triton kernels.",
    "torch.compiler": "You cannot use torch.compiler; write the Triton kernels yourself.",
    "dataclasses.make_dataclass": "You cannot make classes from strings; write the class.",
    "operator.methodcaller": "You cannot use operator.methodcaller; call the method directly.",
}

# Modules that the allowed ones hold as attributes (torch.os, dataclasses.sys, triton...builtins) and a few
# of their functions: reached through any object, they lead to the process, the files and the
# interpreter just as an import would. None is the name of something a Triton candidate needs.
_MODULE_ATTRS = frozenset(
    {
        "os",
        "sys",
        "builtins",
        "inspect",
        "threading",
        "ctypes",
        "subprocess",
        "importlib",
        "gc",
        "signal",
        "socket",
        "shutil",
        "pathlib",
        "multiprocessing",
        "tempfile",
        "pickle",
        "marshal",
        "atexit",
        "traceback",
        "linecache",
        "runpy",
        "pkgutil",
        "faulthandler",
        "resource",
        "mmap",
        "asyncio",
        "concurrent",
        "posix",
        "pty",
        "fcntl",
        "io",
        "sysconfig",
        "platform",
        "types",
        "weakref",
        "codeop",
        "zipimport",
        "selectors",
        "urllib",
        "http",
        "sqlite3",
        "shelve",
        "copyreg",
        "tracemalloc",
        "environ",
        "getenv",
        "putenv",
        "popen",
        "system",
        "fork",
        "setsid",
        "kill",
        "killpg",
        "execv",
        "execve",
        "from_file",
    }
)

_FRAME_ATTRS = {
    "tb_next",
    "f_trace",
    "gi_yieldfrom",
    "cr_await",
    "ag_await",
    "gi_code",
    "cr_code",
    "f_back",
    "f_globals",
    "f_locals",
    "f_builtins",
    "f_code",
    "gi_frame",
    "cr_frame",
    "tb_frame",
    "ag_frame",
}
_TENSOR_HOOKS = {"__torch_function__", "__torch_dispatch__"}
# Dunder attributes that lead from an object to code, frames, modules or the class graph.
_DANGEROUS_DUNDERS = {
    "__traceback__",
    "__context__",
    "__cause__",
    "__annotations__",
    "__dict__",
    "__globals__",
    "__code__",
    "__closure__",
    "__builtins__",
    "__subclasses__",
    "__bases__",
    "__base__",
    "__mro__",
    "__class__",
    "__getattribute__",
    "__setattr__",
    "__delattr__",
    "__self__",
    "__func__",
    "__wrapped__",
    "__module__",
    "__loader__",
    "__spec__",
    "__import__",
    "__reduce__",
    "__reduce_ex__",
    "__getstate__",
    "__setstate__",
    "__defaults__",
    "__kwdefaults__",
}


@dataclass(frozen=True)
class Violation:
    code: str
    message: str
    line: int


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


def check_policy(tree: ast.Module) -> list[Violation]:
    """Every rule the module breaks, in source order."""
    checker = _Checker()
    checker.visit(tree)
    return sorted(checker.violations, key=lambda v: v.line)


class _Checker(ast.NodeVisitor):
    def __init__(self) -> None:
        self.violations: list[Violation] = []
        # import alias -> dotted module or object name ("tl" -> "triton.language")
        self.aliases: dict[str, str] = {}
        # names bound to a plain attribute chain of an import (`T = torch.Tensor`): assigning into them is
        # assigning into the module
        self.derived: dict[str, str] = {}
        self._called_getattr: set[int] = set()
        self._bases: set[int] = set()  # nodes that are the object of an attribute access

    def _add(self, node: ast.AST, code: str, message: str) -> None:
        self.violations.append(Violation(code, message, getattr(node, "lineno", 0)))

    # imports -------------------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_module(node, alias.name)
            bound = alias.asname or alias.name.split(".")[0]
            self.aliases[bound] = alias.name if alias.asname else alias.name.split(".")[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self._add(node, "import", "You cannot use relative imports; a candidate is a single module.")
            return
        module = node.module or ""
        for alias in node.names:
            full = f"{module}.{alias.name}"
            # `from torch import nn` imports a module; `from triton import jit` an object of an allowed one.
            if full in ALLOWED_IMPORTS or module in ALLOWED_IMPORTS:
                self._check_dotted(node, full)
                self.aliases[alias.asname or alias.name] = full
            else:
                self._check_module(node, module)
            if alias.name == "*":
                self._add(node, "import", "You cannot use `import *`; import names explicitly.")

    def _check_module(self, node: ast.AST, module: str) -> None:
        if module not in ALLOWED_IMPORTS:
            allowed = ", ".join(sorted(m for m in ALLOWED_IMPORTS if "." not in m))
            self._add(
                node,
                "import",
                f"You cannot import {module}; a candidate may import only {allowed} "
                "(and torch.nn, torch.nn.functional, triton.language and libdevice).",
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
        for banned, message in _BANNED_NAMES.items():
            if dotted == banned or dotted.startswith(banned + "."):
                self._add(node, "banned_api", message)
                return

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._bases.add(id(node.value))
        dotted = self._resolve(node)
        if dotted:
            self._check_dotted(node, dotted)
        if node.attr in _MODULE_ATTRS:
            self._add(
                node,
                "module_reach",
                f"You cannot use .{node.attr}; it reaches the process, files or interpreter, which belong to "
                "the evaluator.",
            )
        elif node.attr in _FRAME_ATTRS:
            self._add(node, "introspection", f"You cannot read .{node.attr}; frames belong to the evaluator.")
        elif node.attr in _DANGEROUS_DUNDERS:
            self._add(node, "introspection", f"You cannot use .{node.attr}; it reaches the evaluator's objects.")
        elif node.attr.startswith("_") and not node.attr.startswith("__") and not self._owned(node.value):
            self._add(
                node,
                "private_attribute",
                f"You cannot access private attribute .{node.attr} of another object; use public APIs.",
            )
        self.generic_visit(node)

    @staticmethod
    def _owned(value: ast.expr) -> bool:
        return isinstance(value, ast.Name) and value.id in ("self", "cls")

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load) and node.id in _BANNED_CALLS and node.id not in self.aliases:
            self._add(node, "banned_builtin", _BANNED_CALLS[node.id])
        if (
            isinstance(node.ctx, ast.Load)
            and node.id == "getattr"
            and "getattr" not in self.aliases
            and id(node) not in self._called_getattr
        ):
            # handed on (functools.reduce(getattr, ...)), its name is no longer in sight
            self._add(node, "banned_builtin", "You cannot pass getattr around; use the attribute directly.")
        if node.id == "__builtins__":
            self._add(node, "introspection", "You cannot use __builtins__.")
        if (
            isinstance(node.ctx, ast.Load)
            and self.aliases.get(node.id) in ALLOWED_IMPORTS
            and id(node) not in self._bases
        ):
            # A module handed around as a value (`t = torch`, `f(torch)`, `[torch][0]`) is out of sight of
            # every rule about its attributes; use it only as the start of an attribute, as `torch.relu`.
            self._add(
                node,
                "module_value",
                f"You cannot use the module {node.id} as a value; use its attributes directly, as {node.id}.name.",
            )
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "getattr" and "getattr" not in self.aliases:
            self._called_getattr.add(id(func))
            name = node.args[1] if len(node.args) > 1 else None
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str) and not name.value.startswith("_")):
                self._add(
                    node,
                    "banned_builtin",
                    "You cannot call getattr with a computed or private name; use the attribute directly.",
                )
            elif isinstance(name.value, str):
                # getattr(torch, "sys") is torch.sys, getattr(tb, "tb_frame") is tb.tb_frame
                if name.value in _FRAME_ATTRS:
                    self._add(node, "introspection", f"You cannot read .{name.value}; frames belong to the evaluator.")
                if name.value in _MODULE_ATTRS:
                    self._add(
                        node,
                        "module_reach",
                        f"You cannot use .{name.value}; it reaches the process, files or interpreter, which "
                        "belong to the evaluator.",
                    )
                base = self._resolve(node.args[0]) if node.args else None
                if base:
                    self._check_dotted(node, f"{base}.{name.value}")
        self.generic_visit(node)

    # mutation of other objects -------------------------------------------------------------------
    def _check_target(self, target: ast.expr) -> None:
        if isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                self._check_target(element)
            return
        if isinstance(target, ast.Attribute | ast.Subscript):
            root = target
            while isinstance(root, ast.Attribute | ast.Subscript):
                root = root.value
            if isinstance(root, ast.Name) and (root.id in self.aliases or root.id in self.derived):
                self._add(
                    target,
                    "monkey_patch",
                    f"You cannot assign into {self.aliases.get(root.id) or self.derived[root.id]}; modules and "
                    "their classes are shared with the evaluator.",
                )
            elif isinstance(root, ast.Call) and isinstance(root.func, ast.Name) and root.func.id in ("type", "getattr"):
                self._add(
                    target,
                    "monkey_patch",
                    f"You cannot assign into what {root.func.id}() returns; classes and modules are shared "
                    "with the evaluator.",
                )

    def _chain_origin(self, value: ast.expr) -> str | None:
        """The import a plain chain of attributes and subscripts starts from, if it starts from one."""
        root = value
        while isinstance(root, ast.Attribute | ast.Subscript):
            root = root.value
        if isinstance(root, ast.Name):
            return self.aliases.get(root.id) or self.derived.get(root.id)
        return None

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
        for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]:
            if arg is not None:
                self.derived.pop(arg.arg, None)
        self.generic_visit(node)
        self.derived = saved

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._scoped(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._scoped(node)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._scoped(node)

    # classes -------------------------------------------------------------------------------------
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            dotted = self._resolve(base)
            if dotted in ("torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"):
                self._add(
                    node,
                    "tensor_subclass",
                    "You cannot subclass torch.Tensor; return plain tensors computed in forward.",
                )
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name in _TENSOR_HOOKS:
                self._add(item, "tensor_subclass", f"You cannot define {item.name}; return plain tensors.")
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        for name in node.names:
            if name in self.aliases:
                self._add(node, "monkey_patch", f"You cannot rebind the imported name {name}.")
        self.generic_visit(node)
