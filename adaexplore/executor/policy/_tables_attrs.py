"""Data of the static policy about attributes, special names and strings.

Tables only: the attribute names that reach the process or the interpreter, the frame and code prefixes,
the special attributes and names a candidate may use or define, the random-state, launcher and namespace
attributes, and the few names and patterns the checker treats as plain.
"""

from __future__ import annotations

import builtins
import re

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

# Names of _NAMESPACE_ATTRS that are also a method of torch's modules: nn.Module.modules() yields the module's own
# layers (MobileNetV2 initializes its weights over them). Called with no argument, the name reads the method; the
# import system's `modules` (sys.modules, triton.language.extra.modules) is a dictionary, which a call cannot read.
_CALLED_BARE = frozenset({"modules"})

# A line Triton may take for a function's first line (its compiler and its interpreter match it loosely).
_DEF_LINE = re.compile(r"[ \t\f]*def\s")

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
