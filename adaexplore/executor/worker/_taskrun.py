"""Running a task module inside a worker: its sizes, seeds, inputs and models."""

from __future__ import annotations

import ast
import builtins as builtins_module
import contextlib
import copy
import importlib.util
import sys
import types
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from adaexplore.executor.policy import attribute_refused, guard_own_roots
from adaexplore.executor.wire._protocol import JobSpec
from adaexplore.executor.worker._exchange import exchangeable
from adaexplore.executor.worker._faults import ReachRefused, TaskFault

__all__ = [
    "TASK_MODULE",
    "ShadowedTensor",
    "build_model",
    "candidate_builtins",
    "clone_args",
    "derive_seeds",
    "flatten_output",
    "import_file",
    "load_task_module",
    "make_args",
    "own_attributes",
    "rebuilt",
    "resolve_seeds",
    "tensors_in",
    "upcast",
    "upcast_copy",
]

TASK_MODULE = "adaexplore_task"


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
    ) -> ModuleType:
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
                return None  # type: ignore[return-value]
            raise ImportError(f"a candidate cannot import {name}")
        return real_import(name, globals, locals, fromlist, level)  # type: ignore[no-any-return]

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


def _sized_code(path: str, sizes: dict[str, int | float]) -> Any:
    """The task module compiled with each module-level assignment to a name of `sizes` assigning its small value
    instead, so that what the module computes from them (`bias_shape = (out_features,)`, `n = 2 * m`) follows,
    as Python computes it. Compiled under the file's own name and lines, for tracebacks."""
    source = importlib.util.decode_source(Path(path).read_bytes())
    tree = ast.parse(source, path)
    for node in tree.body:
        pairs: list[tuple[ast.expr, ast.expr, Any]] = []
        if isinstance(node, ast.Assign):
            for target in node.targets:
                pairs.append((target, node.value, node))
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            pairs.append((node.target, node.value, node))
        for target, value, owner in pairs:
            if isinstance(target, ast.Name) and target.id in sizes:
                owner.value = ast.copy_location(ast.Constant(sizes[target.id]), value)
            elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
                for i, element in enumerate(target.elts):
                    if isinstance(element, ast.Name) and element.id in sizes:
                        value.elts[i] = ast.copy_location(ast.Constant(sizes[element.id]), value.elts[i])
    return compile(tree, path, "exec", dont_inherit=True)


def load_task_module(path: str, small_sizes: dict[str, int | float] | None, *, name: str = TASK_MODULE) -> ModuleType:
    """Import a task; for small sizes, with its module-level size names assigned their small values where the
    module assigns them (so that names and shapes computed from them follow), and set after the import too.

    Raises:
        TaskFault: the module raises on import or lacks Model, get_inputs or get_init_inputs.
    """
    try:
        if small_sizes:
            module = ModuleType(name)
            module.__file__ = path
            sys.modules[name] = module
            exec(_sized_code(path, small_sizes), module.__dict__)
        else:
            module = import_file(name, path)
    except Exception as exc:
        raise TaskFault(f"the task module raised on import: {type(exc).__name__}: {exc}") from exc
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not callable(getattr(module, name, None)):
            raise TaskFault(f"the task module defines no callable {name}")
    for name, value in (small_sizes or {}).items():
        if not hasattr(module, name):
            raise TaskFault(f"SMALL_SIZES names {name!r}, which the task module does not define")
        setattr(module, name, value)
    return module


def derive_seeds(base: int, count: int) -> list[int]:
    """Trial seeds drawn as KernelBench draws them: seed `base`, then one randint(0, 2**32 - 1) per trial."""
    torch.manual_seed(base)
    return [int(torch.randint(0, 2**32 - 1, (1,)).item()) for _ in range(count)]


def resolve_seeds(spec: JobSpec) -> tuple[int, list[int], int]:
    """(init, trials, timing) seeds: the job's own, or the fixed protocol's (42 and seeds drawn from it)."""
    init = spec.init_seed if spec.init_seed is not None else 42
    trials = spec.trial_seeds if spec.trial_seeds is not None else derive_seeds(42, spec.trials)
    timing = spec.timing_seed if spec.timing_seed is not None else 42
    return init, trials, timing


def _place(value: Any, device: torch.device, cast: torch.dtype | None) -> Any:
    if isinstance(value, torch.Tensor):
        if cast is not None and value.is_floating_point():
            return value.to(device=device, dtype=cast)
        return value.to(device)
    if isinstance(value, list | tuple):
        return type(value)(_place(v, device, cast) for v in value)
    return value


def _drawing_on(device: torch.device, on_device: bool) -> contextlib.AbstractContextManager[Any]:
    """Where the task's factories create tensors: the GPU itself when asked, else PyTorch's default."""
    return device if on_device and device.type == "cuda" else contextlib.nullcontext()


def make_args(
    module: ModuleType,
    fn_name: str,
    seed: int,
    device: torch.device,
    cast: torch.dtype | None,
    *,
    on_device: bool = False,
) -> list[Any]:
    """Call `get_inputs` or `get_init_inputs` under `seed` and move tensors to `device`; with `on_device`
    (a CUDA device only) the function runs with `device` as default device, so values are drawn there.

    Raises:
        TaskFault: the function raised or did not return a list or tuple.
    """
    torch.manual_seed(seed)
    try:
        with _drawing_on(device, on_device):
            values = getattr(module, fn_name)()
    except Exception as exc:
        raise TaskFault(f"{fn_name}() raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(values, list | tuple):
        raise TaskFault(f"{fn_name}() must return a list or tuple, not {type(values).__name__}")
    return [_place(v, device, cast) for v in values]


def build_model(
    cls: Callable[..., torch.nn.Module],
    init_args: list[Any],
    seed: int,
    device: torch.device,
    cast: torch.dtype | None,
    *,
    on_device: bool = False,
) -> torch.nn.Module:
    """Construct under `seed` on the CPU (as KernelBench does), or on a CUDA `device` itself with
    `on_device`, then move to `device` (and cast)."""
    torch.manual_seed(seed)
    with torch.no_grad(), _drawing_on(device, on_device):
        model = cls(*init_args)
    model = model.to(device)
    if cast is not None:
        model = model.to(dtype=cast)
    return model


def upcast_copy(model: torch.nn.Module) -> torch.nn.Module:
    """A float64 copy of `model` for the high-precision reference."""
    return copy.deepcopy(model).to(dtype=torch.float64)


def upcast(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(torch.float64) if value.is_floating_point() else value
    if isinstance(value, list | tuple):
        return type(value)(upcast(v) for v in value)
    return value


def tensors_in(value: Any) -> list[torch.Tensor]:
    """The tensors in `value`, in order, looking into lists, tuples and dicts (a task may pass a list of
    tensors as one argument)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [t for item in value for t in tensors_in(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in tensors_in(item)]
    return []


def clone_args(value: Any) -> Any:
    """`value` with every tensor in it cloned, through lists, tuples and dicts."""
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, list | tuple):
        return rebuilt(value, [clone_args(item) for item in value])
    if isinstance(value, dict):
        return {key: clone_args(item) for key, item in value.items()}
    return value


def rebuilt(value: list[Any] | tuple[Any, ...], items: list[Any]) -> Any:
    """A list or tuple like `value` (a named tuple stays one) holding `items`."""
    if hasattr(value, "_fields"):
        return type(value)(*items)
    return type(value)(items) if type(value) in (list, tuple) else items


class ShadowedTensor(TypeError):
    """A tensor carries attributes of its own: they would shadow torch's methods (detach, contiguous,
    untyped_storage ...) in the evaluator's calls on it."""


def own_attributes(tensor: torch.Tensor) -> list[str]:
    """The names a tensor (or a Parameter) carries in its instance dictionary: none for a tensor torch made."""
    return sorted(vars(tensor))


# torch's own classes: a Parameter is refused as an output later, where it is not a plain tensor
_PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)


def flatten_output(value: Any) -> list[torch.Tensor]:
    """The tensors a forward returned, in order: one torch.Tensor, or a tuple or list of them (torch's own named
    tuples, `torch.max(x, 1)`'s, included), each of exactly that type (or a Parameter). The types are read before
    anything else: an object of any other type is never iterated, so no code of its own runs here.

    Raises:
        ShadowedTensor: an output carries attributes of its own.
        DisguisedOutput: the forward returned a subclass of a tensor, tuple or list.
        OutputNotTensors: the forward returned something other than tensors.
    """
    from adaexplore.executor.worker._faults import DisguisedOutput, OutputNotTensors

    def refused(kind: type, index: int) -> Exception:
        # a subclass answers iteration, indexing and every method itself: what the timer and the checks would
        # see is up to its code
        if issubclass(kind, torch.Tensor):
            return DisguisedOutput(
                f"output {index} is a {kind.__name__}, not a plain torch.Tensor; you cannot return subclasses of "
                "torch.Tensor: return plain tensors computed in forward."
            )
        if issubclass(kind, tuple | list):
            base = "tuple" if issubclass(kind, tuple) else "list"
            return DisguisedOutput(
                f"You cannot return a {kind.__name__} (a subclass of {base}): forward must return plain "
                "torch.Tensor objects, alone or in a plain tuple or list, computed before it returns."
            )
        return OutputNotTensors(f"forward must return a torch.Tensor (or a tuple of them), not {kind.__name__}")

    kind = type(value)
    if kind in _PLAIN_TENSORS:
        tensors = [value]
    elif kind in (tuple, list) or any(kind is named for named in vars(torch.return_types).values()):
        tensors = list(value)
        if not tensors:
            raise OutputNotTensors(
                f"forward must return a torch.Tensor (or a tuple of them), not an empty {kind.__name__}"
            )
        for index, item in enumerate(tensors):
            if type(item) not in _PLAIN_TENSORS:
                raise refused(type(item), index)
    else:
        raise refused(kind, 0)
    for index, tensor in enumerate(tensors):
        names = own_attributes(tensor)
        if names:
            raise ShadowedTensor(
                f"You cannot set attributes on the tensors you return: output {index} carries "
                f"{', '.join(names[:5])}. Return plain tensors."
            )
        if tensor.is_nested:
            raise OutputNotTensors(f"output {index} is a nested tensor; forward must return ordinary dense tensors")
        if tensor.layout is not torch.strided:
            raise OutputNotTensors(
                f"output {index} has layout {str(tensor.layout).removeprefix('torch.')}; forward must return "
                "ordinary dense tensors (call .to_dense())"
            )
        if not exchangeable(tensor.dtype):
            raise OutputNotTensors(
                f"output {index} has dtype {str(tensor.dtype).removeprefix('torch.')}, which cannot be compared; "
                "return the reference's dtype"
            )
    return tensors
