"""Static checks of a candidate's source, done in the caller's process without importing it.

The candidate runs in a worker process that also holds the measuring code. These rules keep the
candidate from reaching that code (introspection, monkey-patching, threads, other processes, files,
side streams), so the numbers the worker reports are the numbers it measured. Each rule is one
(code, message) pair; the message is the sentence a model reads.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import itertools
import re
import string
import types
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "ALLOWED_IMPORTS",
    "Violation",
    "attribute_refused",
    "banned_name",
    "check_policy",
    "defines_model_new",
    "guard_own_roots",
    "needs_owner",
]

# Modules a candidate may import. Everything a Triton kernel needs, and nothing that reaches the
# process, the file system or the interpreter's internals.
ALLOWED_IMPORTS = frozenset(
    {
        "__future__",
        "abc",
        "collections",
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
    "id": "You cannot use id(); object addresses belong to the evaluator.",
}

# Dotted names (after resolving import aliases) that a candidate may not use.
_BANNED_NAMES = {
    "torch.compile": "You cannot use torch.compile; write the Triton kernels yourself.",
    "torch.cuda.Stream": "You cannot create CUDA streams; launch on the current stream.",
    "torch.cuda.stream": "You cannot switch CUDA streams; launch on the current stream.",
    "torch.cuda.set_stream": "You cannot switch CUDA streams; launch on the current stream.",
    "torch.cuda.ExternalStream": "You cannot use other CUDA streams; launch on the current stream.",
    "torch.cuda.streams": "You cannot create CUDA streams; launch on the current stream.",
    "torch.cuda.StreamContext": "You cannot switch CUDA streams; launch on the current stream.",
    "torch.accelerator": "You cannot switch streams or devices; launch on the current stream.",
    "torch.get_device_module": "You cannot fetch device modules; use torch.cuda's public functions directly.",
    "torch.mtia": "You cannot use other devices' modules; launch on the current CUDA stream.",
    "torch.xpu": "You cannot use other devices' modules; launch on the current CUDA stream.",
    "torch.cuda.tunable": "You cannot use torch.cuda.tunable (it writes files and changes global settings).",
    "torch.cuda.gds": "You cannot open files in a candidate.",
    "torch.cuda.set_sync_debug_mode": "You cannot change global torch settings.",
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
    "triton.compile": "You cannot call Triton's compiler directly; use @triton.jit.",
    "torch.CompilationUnit": "You cannot compile TorchScript from strings; write Triton kernels.",
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
    # these read and set attributes whose names they are given as strings
    "functools.update_wrapper": "You cannot use functools.update_wrapper; write the function you mean.",
    "functools.wraps": "You cannot use functools.wraps; write the function you mean.",
    # classes made by calling a metaclass with a namespace of strings
    "abc.ABCMeta": "You cannot use abc.ABCMeta; subclass abc.ABC if you need an abstract class.",
    "enum.EnumMeta": "You cannot use enum's metaclass; write a plain class.",
    "enum.EnumType": "You cannot use enum's metaclass; write a plain class.",
    # enum is not importable; these write an enum's members into the module its `module=` argument names,
    # should another path reach them
    "enum.global_enum": "You cannot use enum.global_enum (it writes into other modules).",
    "enum.global_enum_repr": "You cannot use enum.global_enum_repr.",
    "enum.global_flag_repr": "You cannot use enum.global_flag_repr.",
    "enum.global_str": "You cannot use enum.global_str.",
    # files, and shared libraries loaded by path
    "torch.onnx": "You cannot use torch.onnx in a candidate (it writes files).",
    "torch.cuda.memory": "You cannot use torch.cuda.memory (allocators load shared libraries); allocate with torch.",
    "torch.cuda.CUDAPluggableAllocator": "You cannot load an allocator; allocate with torch.",
    "torch.cuda.change_current_allocator": "You cannot change the allocator; allocate with torch.",
    # graphs are captured on a side stream and replayed out of sight of the launch counter
    "torch.cuda.graphs": "You cannot capture CUDA graphs; launch your kernels in forward.",
    "torch.cuda.graph": "You cannot capture CUDA graphs; launch your kernels in forward.",
    "torch.cuda.CUDAGraph": "You cannot capture CUDA graphs; launch your kernels in forward.",
    "torch.cuda.graph_pool_handle": "You cannot capture CUDA graphs; launch your kernels in forward.",
    "torch.cuda.make_graphed_callables": "You cannot capture CUDA graphs; launch your kernels in forward.",
    # assembly reads and writes any address
    "triton.language.inline_asm_elementwise": "You cannot use inline assembly; write the kernel in Triton.",
    "triton.language.core.inline_asm_elementwise": "You cannot use inline assembly; write the kernel in Triton.",
}
# Modules whose every function is banned under any name: torch.cuda re-exports most of them
# (torch.cuda.caching_allocator_delete is torch.cuda.memory.caching_allocator_delete).
_BANNED_FUNCTION_MODULES = ("torch.cuda.memory", "torch.cuda.graphs")

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
        # the allowed modules reached again through another module's attribute (torch.nn.functional.torch):
        # every dotted-name rule below would be bypassed by the detour
        "torch",
        "triton",
        # modules of numpy, multiprocessing, files and logging that torch's modules hold under short names
        "np",
        "numpy",
        "mp",
        "glob",
        "logging",
        "time",
        "gzip",
        "bz2",
        "lzma",
        "zipfile",
        "tarfile",
        "codecs",
        "dis",
        "grp",
        "pwd",
        "bltns",
        "knobs",
        # the GPU's management library (clocks, power limits): torch.cuda holds it where it is installed
        "pynvml",
        "amdsmi",
        "tofile",
        "dump",
        "dumps",
        "memmap",
    }
)

# Attributes of code objects, frames, tracebacks, generators and coroutines, by prefix: every one leads to code
# or to another frame's variables.
_FRAME_PREFIXES = ("co_", "f_", "gi_", "cr_", "ag_", "tb_")
_TENSOR_HOOKS = {"__torch_function__", "__torch_dispatch__"}
# The special attributes a candidate may name: construction, calling, containers and arithmetic. Every other
# dunder is refused, as most lead from an object to code, frames, modules or the class graph (__globals__,
# __class__, __array_namespace__ ...), and a list of the dangerous ones is never complete.
_ALLOWED_DUNDERS = frozenset(
    {
        "__init__",
        "__call__",
        "__name__",
        "__qualname__",
        "__doc__",
        "__version__",
        "__len__",
        "__iter__",
        "__next__",
        "__contains__",
        "__getitem__",
        "__setitem__",
        "__enter__",
        "__exit__",
        "__repr__",
        "__str__",
        "__bool__",
        "__int__",
        "__float__",
        "__index__",
        "__hash__",
        "__post_init__",
        *(
            f"__{prefix}{op}__"
            for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor")
            for prefix in ("", "r", "i")
        ),
        *(f"__{op}__" for op in ("neg", "pos", "abs", "invert", "lt", "le", "gt", "ge", "eq", "ne")),
    }
)
# Special methods a candidate may define. Python and trusted code call special methods with names and
# objects of their own choosing (__setattr__, __reduce_ex__, __instancecheck__, __set_name__ ...): defining
# one turns that call into a way around the attribute rules.
_DEFINABLE_DUNDERS = frozenset(_ALLOWED_DUNDERS - {"__name__", "__qualname__", "__doc__", "__version__"})
# Format strings read attributes and items by the names in their fields ("{0.__globals__}"), out of sight of
# the attribute rules; a format string must be a literal with plain fields.
_FORMAT_METHODS = frozenset({"format", "format_map"})
# Special names a candidate may use as plain names (`if __name__ == "__main__"`, `__all__ = [...]`). Any
# other (`__annotations__` in a class body feeds code generators; `__torch_dispatch__` bound by a for loop
# is a hook) is refused, read or bound.
_ALLOWED_DUNDER_NAMES = frozenset({"__name__", "__all__", "__slots__", "__doc__", "__qualname__"})
# The random state the evaluator draws its seeds and inputs from.
_SEED_ATTRS = frozenset(
    {"initial_seed", "get_rng_state", "get_rng_state_all", "default_generator", "default_generators", "get_state"}
)
# Public methods and classes that hand out a function's namespace (its globals, builtins included).
# A kernel's compiled handles, which launch with any integers as pointers and on any stream handle, out of
# the checks of kernel[grid](...).
_LAUNCHER_ATTRS = frozenset({"warmup", "preload", "device_caches"})
_NAMESPACE_ATTRS = frozenset(
    {
        "get_capture_scope",
        "used_global_vals",
        "JITFunction",
        "InterpretedFunction",
        # the import system, held by modules under these names (a module's spec and loader read and write
        # files; `from sys import modules` makes sys.modules an attribute)
        "modules",
        "spec",
        "loader",
        "module_from_spec",
        "module_finder",
        "find_spec",
        "get_data",
        "set_data",
        "driver",
        # code from strings, and interception of every operator
        "CompilationUnit",
        "TorchDispatchMode",
        "TorchFunctionMode",
    }
)


def banned_name(dotted: str) -> str | None:
    """The message for a dotted name (import aliases resolved) that a candidate may not use, or None."""
    for banned, message in _BANNED_NAMES.items():
        if dotted == banned or dotted.startswith(banned + "."):
            return message
    return None


def attribute_refused(name: str, *, owned: bool) -> tuple[str, str] | None:
    """The (code, message) of the rule that reading attribute `name` breaks, however it is read (`x.name`,
    `getattr(x, "name")`, `case C(name=...)`); `owned`: the object is the candidate's own self or cls."""
    if name in _MODULE_ATTRS:
        return (
            "module_reach",
            f"You cannot use .{name}; it reaches the process, files or interpreter, which belong to the evaluator.",
        )
    if name.startswith(_FRAME_PREFIXES):
        return "introspection", f"You cannot read .{name}; code objects and frames belong to the evaluator."
    if name in _FORMAT_METHODS:
        return (
            "introspection",
            f"You cannot use .{name} except on a literal string with plain fields ({{}}, {{0}}, {{name}}); use "
            "an f-string.",
        )
    if name in _SEED_ATTRS:
        return "introspection", f"You cannot read .{name}; the random state belongs to the evaluator."
    if name in _LAUNCHER_ATTRS and not owned:
        return (
            "introspection",
            f"You cannot use .{name}; launch a kernel as kernel[grid](...), the one way the evaluator checks.",
        )
    if name in _NAMESPACE_ATTRS:
        return (
            "introspection",
            f"You cannot use .{name}; it hands out namespaces, modules, files or operator hooks, which belong "
            "to the evaluator.",
        )
    if name.startswith("__") and name.endswith("__"):
        if name in _ALLOWED_DUNDERS:
            return None
        return (
            "introspection",
            f"You cannot use .{name}; special attributes other than protocol methods (such as __init__ and "
            "__call__) reach the evaluator's objects.",
        )
    if name.startswith("_") and not owned:
        return "private_attribute", f"You cannot access private attribute .{name} of another object; use public APIs."
    return None


# A line Triton may take for a function's first line (its compiler and its interpreter match it loosely).
_DEF_LINE = re.compile(r"[ \t\f]*def\s")


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


# The packages whose modules a candidate may reach through attributes (torch.linalg, triton.language.math,
# functools through torch.nn.modules.module): the allowed imports' own, and modules that only compute.
_REACHABLE_ROOTS = frozenset({name.split(".")[0] for name in ALLOWED_IMPORTS} | {"cmath", "re"})

Resolver = Callable[[str], "tuple[str, object] | None"]


def resolve_dotted(dotted: str) -> tuple[str, object] | None:
    """The object a dotted name of an allowed import names, with its canonical name: each module on the way
    is named by its own __name__, so torch.nn.quantized.modules.conv.ops reads torch.ops. Imports only the
    allowed modules (trusted code); None when the name does not resolve (the candidate fails on it itself).
    For the candidate's worker, which has torch and triton loaded; the caller's process has neither."""
    parts = dotted.split(".")
    start = next((i for i in range(len(parts), 0, -1) if ".".join(parts[:i]) in ALLOWED_IMPORTS), 0)
    if not start:
        return None
    value: object = importlib.import_module(".".join(parts[:start]))
    canonical = ".".join(parts[:start])
    for part in parts[start:]:
        try:
            value = getattr(value, part)
        except Exception:  # AttributeError, or a lazy attribute that fails to load
            return None
        canonical = value.__name__ if isinstance(value, types.ModuleType) else f"{canonical}.{part}"
    return canonical, value


# Packages whose objects a candidate may hold, beyond _REACHABLE_ROOTS: the interpreter's own types and the
# C halves of the allowed standard modules.
_OBJECT_ROOTS = frozenset({"builtins", "_operator", "_functools", "_collections", "_abc", "typing_extensions"})


def _origin(value: object) -> str | None:
    """Why an object reached through an allowed module is out of bounds (the module it comes from, or the
    modules it holds), or None when it is not."""
    if isinstance(value, dict) and any(
        isinstance(v, types.ModuleType) for v in itertools.islice(value.values(), 10_000)
    ):
        return "a dictionary of modules"
    if isinstance(value, type | types.FunctionType | types.BuiltinFunctionType | types.MethodType):
        module = getattr(value, "__module__", None)
    else:
        module = type(value).__module__
    if not isinstance(module, str):
        return None
    root = module.split(".")[0]
    if root in _REACHABLE_ROOTS or root in _OBJECT_ROOTS:
        return None
    return f"from the module {module}"


@functools.cache
def _banned_objects() -> dict[int, str]:
    """The objects the banned names name, by identity (resolved where torch and triton are loaded): the same
    function re-exported by another module (torch.autograd.profiler_util.attrgetter is operator.attrgetter)
    is refused under any name."""
    found: dict[int, str] = {}
    for dotted in _BANNED_NAMES:
        parts = dotted.split(".")
        try:
            value: object = importlib.import_module(parts[0])
            for part in parts[1:]:
                value = getattr(value, part)
        except Exception:  # not installed, or not in this version
            continue
        if not isinstance(value, int | float | str | bool | type(None)):
            found[id(value)] = dotted
    for module_name in _BANNED_FUNCTION_MODULES:
        try:
            module = importlib.import_module(module_name)
        except Exception:  # not in this version
            continue
        for value in vars(module).values():
            if callable(value) and getattr(value, "__module__", None) == module_name:
                found.setdefault(id(value), module_name)
    return found


# Builtin classes whose positional class patterns match the subject itself (`case int(n)`) and read no
# attribute; any other class reads the attributes its __match_args__ names.
_SELF_MATCHING = frozenset(
    {"bool", "bytearray", "bytes", "dict", "float", "frozenset", "int", "list", "set", "str", "tuple"}
)
# Objects whose attributes a candidate may set: its own instance, its class, an autograd Function's context.
_BUILTIN_NAMES = frozenset(vars(builtins))
_OWN_ROOTS = frozenset({"self", "cls", "ctx"})
# Properties of tensors and layers that initialisation code sets on other objects (w.data = ..., lin.bias = None).
_SETTABLE_ATTRS = frozenset({"data", "requires_grad", "grad", "weight", "bias"})
_PLAIN_STRINGS = _ALLOWED_DUNDERS | _ALLOWED_DUNDER_NAMES | {"__main__"}


# A method's first parameter is trusted only while the method is called on an instance of the candidate's
# class. Read through the class (Helper.go, getattr(Helper, "go"), type(x).go, super() in a classmethod) the
# method is a plain function, and any object (a JITFunction, Triton's interpreter) could be passed as self.
_DETOUR_ADVICE = "call the method on an instance of your class (obj.{name}(...), or super().{name}(...) in a method)"
# Decorators a method with a trusted first parameter may carry: each binds the method to the instance it is
# read from. A decorator of the candidate's own would receive the bare function and could call it with any
# object as self.
_METHOD_DECORATORS = frozenset(
    {
        "staticmethod",
        "classmethod",
        "property",
        "functools.cache",
        "functools.lru_cache",
        "functools.cached_property",
        "torch.no_grad",
        "torch.inference_mode",
        "torch.enable_grad",
        "torch.amp.custom_fwd",
        "torch.amp.custom_bwd",
        "torch.cuda.amp.custom_fwd",
        "torch.cuda.amp.custom_bwd",
        "torch.autograd.function.once_differentiable",
        "abc.abstractmethod",
        "typing.final",
        "typing.override",
        "typing.overload",
        "typing.no_type_check",
    }
)
_PROPERTY_PARTS = frozenset({"setter", "getter", "deleter"})
# The static methods torch calls with an autograd context as first argument, through Function.apply.
_AUTOGRAD_METHODS = frozenset({"forward", "backward", "setup_context", "jvp", "vjp", "vmap"})
_AUTOGRAD_BASES = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})


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
            for base in bases.get(name, set()) & classes.keys():
                inherited = classes[base]
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


def needs_owner(name: str) -> bool:
    """Whether the rules allow reading attribute `name` only on the candidate's own objects (self._x)."""
    return attribute_refused(name, owned=False) is not None and attribute_refused(name, owned=True) is None


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
    return _OwnRootGuard(guard, _import_aliases(tree)).visit(tree)  # type: ignore[no-any-return]


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
    handlers, patterns), and the names of the classes and functions it defines. Deliberately scope-blind: it
    only has to tell names the module defines from names it does not."""
    bound: set[str] = set()
    defined: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
        elif type(node).__name__ in ("TypeVar", "ParamSpec", "TypeVarTuple"):  # Python 3.12 type parameters
            bound.add(node.name)  # type: ignore[attr-defined]
    return bound | defined, defined


def _is_tensor_class(resolved: tuple[str, object] | None) -> bool:
    """Whether a resolved name is torch.Tensor or a class derived from it (torch.nn.Buffer, the Parameters)."""
    value = resolved[1] if resolved is not None else None
    return isinstance(value, type) and any(
        f"{c.__module__}.{c.__qualname__}" in ("torch.Tensor", "torch._C.TensorBase") for c in value.__mro__
    )


def check_policy(tree: ast.Module, resolve: Resolver | None = None, *, source: str | None = None) -> list[Violation]:
    """Every rule the module breaks, in source order. With `resolve` (resolve_dotted, where torch and triton
    are loaded) names of allowed imports are also checked as what they are: a banned function reached under
    another module's name, a module outside the allowed packages, a module used as a value. With `source`
    (the text `tree` was parsed from) strings are checked line by line as they stand in the file."""
    checker = _Checker(tree, resolve, source)
    checker.visit(tree)
    return sorted(checker.violations, key=lambda v: v.line)


class _Checker(ast.NodeVisitor):
    def __init__(self, tree: ast.AST, resolve: Resolver | None = None, source: str | None = None) -> None:
        self.resolve = resolve
        self._lines = source.splitlines() if source is not None else None
        self._in_fstring: set[int] = set()
        self._methods: set[int] = set()  # functions defined directly in a class body
        self._resolved: dict[str, tuple[str, object] | None] = {}
        self._called: set[int] = set()  # nodes that are the function of a call
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
        self._class_uses: set[int] = set()  # names of classes where a class may stand (isinstance, except ...)
        self._functions: list[ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda] = []
        self._kernel_depth = 0  # inside a Triton kernel, which nothing calls as a method

    def _add(self, node: ast.AST, code: str, message: str) -> None:
        self.violations.append(Violation(code, message, getattr(node, "lineno", 0)))

    # imports -------------------------------------------------------------------------------------
    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        self._check_own_root(node, node.name)
        self._allow_class(node.type)
        self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise) -> None:
        self._allow_class(node.exc)
        self._allow_class(node.cause)
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        for operand in [node.left, *node.comparators]:
            self._allow_class(operand)
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
            if full in ALLOWED_IMPORTS or module in ALLOWED_IMPORTS:
                self._check_dotted(node, full)
                refused = attribute_refused(alias.name, owned=False) if alias.name != "*" else None
                if refused:  # `from torch import sys` reads torch.sys
                    self._add(node, *refused)
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
        message = banned_name(dotted)
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
        else:
            refused = attribute_refused(node.attr, owned=self._owned(node.value))
            if refused:
                self._add(node, *refused)
        self._check_detour(node, node.value, node.attr)
        self.generic_visit(node)

    # methods read through their class -------------------------------------------------------------
    def _allow_class(self, node: ast.expr | None) -> None:
        for item in node.elts if isinstance(node, ast.Tuple) else [node]:
            if isinstance(item, ast.Name):
                self._class_uses.add(id(item))

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
        if node.id == "cls" or (node.id in self._classes and self._classes[node.id].methods):
            self._add(
                node,
                "method_detour",
                f"You cannot use the class {node.id} as a value: whatever receives it could call its methods with "
                f"any object as self. Create instances ({node.id}(...)), read its constants ({node.id}.NAME) or "
                f"test with isinstance(x, {node.id}); call the method on an instance of your class.",
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

    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            self._check_rebinding(node, node.id)
            self._check_own_root(node, node.id)
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
        if (
            isinstance(node.ctx, ast.Load)
            and node.id == "type"
            and "type" not in self.aliases
            and id(node) not in self._type_calls
        ):
            # as a base (`class M(type)`), an alias or an argument, it makes classes out of strings
            self._add(node, "banned_builtin", "You cannot use type except as type(x) with one argument.")
        if isinstance(node.ctx, ast.Load):
            self._check_class_value(node)
        if isinstance(node.ctx, ast.Load) and node.id == "super" and "super" not in self.bound:
            if id(node) not in self._called:
                self._add(node, "banned_builtin", "You cannot use super except as super().method(...).")
        if (
            isinstance(node.ctx, ast.Load)
            and node.id not in self.bound
            and not hasattr(builtins, node.id)
            and node.id not in _ALLOWED_DUNDER_NAMES
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
        elif isinstance(node.ctx, ast.Load) and node.id in self.aliases:
            self._check_real(node, self.aliases[node.id])
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        self._called.add(id(func))
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
        if isinstance(func, ast.Name) and func.id == "type" and "type" not in self.aliases:
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
                refused = attribute_refused(name.value, owned=False)
                if refused:
                    self._add(node, *refused)
                if node.args:
                    self._check_detour(node, node.args[0], name.value)
                base = self._resolve(node.args[0]) if node.args else None
                if base:
                    self._check_dotted(node, f"{base}.{name.value}")
                    self._check_real(node, f"{base}.{name.value}")
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
        self._allow_annotation(node.annotation)
        self.generic_visit(node)

    def _allow_annotation(self, node: ast.expr | None) -> None:
        # an annotation is read back only through __annotations__ and typing's evaluators, both refused
        for item in ast.walk(node) if node is not None else ():
            if isinstance(item, ast.Name):
                self._class_uses.add(id(item))

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
