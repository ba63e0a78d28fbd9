"""Importing a file as a module, and the builtins a candidate's module runs on: an `__import__` of the allowed
modules alone, without the builtins that run code from strings or reach frames, and a `getattr`, `hasattr` and
`type` that apply the policy's rules where the static check cannot see the name or the object."""

from __future__ import annotations

import ast
import builtins as builtins_module
import importlib.util
import sys
import types
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from adaexplore.executor.policy import attribute_refused, guard_own_roots
from adaexplore.executor.worker.confine._faults import ReachRefused

__all__ = ["candidate_builtins", "import_file"]


def import_file(name: str, path: str | Path, *, builtins: dict[str, Any] | None = None) -> ModuleType:
    """Import the file at `path` as module `name` (Triton's JIT needs real files). `builtins`: the builtins
    its code sees, in place of the interpreter's. With candidate_builtins, every use of self, cls or ctx that
    the policy allows only on the candidate's own objects is checked at run time (see guard_own_roots)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    if builtins is not None:
        module.__dict__["__builtins__"] = builtins
    sys.modules[name] = module
    if builtins is None or _OWN_GUARD not in builtins:
        spec.loader.exec_module(module)
        return module
    filename = spec.origin or str(path)
    # compiled under the file's own name and positions: tracebacks and Triton's reading of a kernel's source
    # from the file see the file as written
    source = importlib.util.decode_source(Path(filename).read_bytes())
    tree = guard_own_roots(ast.parse(source, filename), _OWN_GUARD)
    exec(compile(tree, filename, "exec", dont_inherit=True), module.__dict__)
    return module


# Builtins a candidate's own code goes without: code from strings, files, the namespaces of frames, and the
# debugger. Whatever a candidate reaches that runs code in its module's namespace (generated methods, say)
# finds them missing there too.
_WITHHELD_BUILTINS = frozenset(
    {
        "exec",
        "eval",
        "compile",
        "open",
        "globals",
        "locals",
        "vars",
        "breakpoint",
        "input",
        "exit",
        "quit",
        "help",
        "setattr",
        "delattr",
        # an object's address, which a kernel could turn into a pointer into the worker's memory
        "id",
    }
)


# Classes that build code, functions, modules and frames out of parts (FunctionType(code, globals) runs a code
# object with any names in it); type(x) does not hand them to a candidate.
_CONSTRUCTOR_TYPES = frozenset(
    {value for value in vars(types).values() if isinstance(value, type)}
    - {types.NoneType, types.EllipsisType, types.NotImplementedType}
)

# Streams and events: type(torch.cuda.current_stream())() would make the stream a candidate may not create.
_STREAM_TYPES = (torch.Stream, torch.Event, torch.cuda.Stream, torch.cuda.Event)


# The builtin through which a candidate's trusted roots pass (see guard_own_roots); a special name, which the
# policy keeps the candidate from naming.
_OWN_GUARD = "__adaexplore_own__"
# What torch hands an autograd Function's forward and backward as ctx.
_AUTOGRAD_CONTEXTS = (torch.autograd.function.FunctionCtx,)


def candidate_builtins(allowed: frozenset[str]) -> dict[str, Any]:
    """The builtins of a candidate module: the interpreter's without _WITHHELD_BUILTINS, and an __import__
    that imports only the `allowed` modules (and the packages above them, which `import a.b` binds; from such a
    package, `from a import b` takes only a module on the way to an allowed one, not another of its submodules)."""
    real_import = builtins_module.__import__
    modules = sys.modules

    def on_the_way(name: str) -> bool:
        return any(m == name or m.startswith(name + ".") for m in allowed)

    def restricted_import(
        name: str,
        globals: Any = None,
        locals: Any = None,
        fromlist: Any = (),
        level: int = 0,
    ) -> ModuleType | None:
        beside = False
        if name not in allowed and on_the_way(name):
            # a package above an allowed module (triton.tools, above triton.tools.tensor_descriptor): each name of
            # the fromlist, which it imports as a submodule, must lead on to an allowed module; read once, into a
            # tuple, which is what is imported
            fromlist = tuple(fromlist) if fromlist else ()
            beside = not all(isinstance(f, str) and on_the_way(f"{name}.{f}") for f in fromlist)
        if level or beside or not on_the_way(name):
            if type(fromlist) is list and not fromlist and not level and name in modules:
                # PyImport_ImportModule, called by C code (torch's own, making a tensor's storage) while a
                # candidate frame is the innermost: it asks with an empty list and reads the module from
                # sys.modules itself. Nothing is imported and nothing is returned to the caller.
                return None
            raise ImportError(f"a candidate cannot import {name}")
        return real_import(name, globals, locals, fromlist, level)

    real_getattr = builtins_module.getattr
    # held by the closure, not looked up in this module's namespace at each call: a candidate that
    # managed to write into the namespace cannot swap the rules out
    refuses = attribute_refused

    def checked_getattr(obj: object, name: str, *default: object) -> object:
        # the policy's attribute rules, for names the static check cannot see (computed ones)
        refused = refuses(name, owned=False) if isinstance(name, str) else None
        if refused:
            # a private attribute of the candidate's own object (getattr(self, "_cache", None)), as self._cache
            if refuses(name, owned=True):
                raise ReachRefused(refused[1])
            own(obj, name)
        return real_getattr(obj, name, *default)

    real_type = builtins_module.type
    constructors = _CONSTRUCTOR_TYPES

    def checked_type(obj: object) -> type:
        # One argument only (three make a class from strings). A class's type is a metaclass, and the
        # constructor types make code out of parts: both stay out of reach.
        found = real_type(obj)
        if isinstance(obj, real_type) or found in constructors or issubclass(found, _STREAM_TYPES):
            raise TypeError(
                f"a candidate may call type(x) on plain values only, not on {found.__name__} objects (classes, "
                "code and streams stay out of reach); compare with isinstance instead"
            )
        return found

    namespace = {k: v for k, v in vars(builtins_module).items() if k not in _WITHHELD_BUILTINS}
    contexts = _AUTOGRAD_CONTEXTS
    verdicts: dict[type, bool] = {}

    def own(obj: object, name: str) -> object:
        # self, cls or ctx where the policy trusted it: the object must be the candidate's own (an instance of
        # a class defined in a module running on these builtins, or such a class) or torch's autograd context
        cls = obj if isinstance(obj, real_type) else real_type(obj)
        verdict = verdicts.get(cls)
        if verdict is None:
            module_name = cls.__dict__.get("__module__")
            home = modules.get(module_name) if isinstance(module_name, str) else None
            verdict = verdicts[cls] = getattr(home, "__dict__", {}).get("__builtins__") is namespace
        if verdict or isinstance(obj, contexts):
            return obj
        raise ReachRefused(
            f"You cannot use .{name} of a {cls.__name__} object through a method's first parameter: the rules "
            "trust self, cls and ctx only as your own objects, so call the method on an instance of your class "
            "instead."
        )

    real_hasattr = builtins_module.hasattr

    def checked_hasattr(obj: object, name: str) -> bool:
        # hasattr reads the attribute to answer: private ones of the candidate's own objects only
        if isinstance(name, str) and refuses(name, owned=False):
            refused = refuses(name, owned=True)
            if refused:
                raise ReachRefused(refused[1])
            own(obj, name)
        return real_hasattr(obj, name)

    namespace[_OWN_GUARD] = own
    namespace["hasattr"] = checked_hasattr
    namespace["__import__"] = restricted_import
    namespace["getattr"] = checked_getattr
    namespace["type"] = checked_type
    return namespace
