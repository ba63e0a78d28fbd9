"""Running a task module inside a worker: its sizes, seeds, inputs and models."""

from __future__ import annotations

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

from adaexplore.executor._policy import attribute_refused
from adaexplore.executor._protocol import JobSpec
from adaexplore.executor.worker._exchange import exchangeable

__all__ = [
    "TASK_MODULE",
    "ShadowedTensor",
    "TaskFault",
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


class TaskFault(Exception):
    """The task's own code raised, or does not provide what a task must."""


def import_file(name: str, path: str | Path, *, builtins: dict[str, Any] | None = None) -> ModuleType:
    """Import the file at `path` as module `name` (Triton's JIT needs real files). `builtins`: the builtins
    its code sees, in place of the interpreter's."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    if builtins is not None:
        module.__dict__["__builtins__"] = builtins
    sys.modules[name] = module
    spec.loader.exec_module(module)
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


def candidate_builtins(allowed: frozenset[str]) -> dict[str, Any]:
    """The builtins of a candidate module: the interpreter's without _WITHHELD_BUILTINS, and an __import__
    that imports only the `allowed` modules (and the packages above them, which `import a.b` binds)."""
    real_import = builtins_module.__import__

    def restricted_import(
        name: str,
        globals: Any = None,
        locals: Any = None,
        fromlist: Any = (),
        level: int = 0,
    ) -> ModuleType:
        if level or not any(m == name or m.startswith(name + ".") for m in allowed):
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
            raise AttributeError(refused[1])
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
    namespace["__import__"] = restricted_import
    namespace["getattr"] = checked_getattr
    namespace["type"] = checked_type
    return namespace


def load_task_module(path: str, small_sizes: dict[str, int | float] | None) -> ModuleType:
    """Import a task and, for small sizes, assign its module-level size names.

    Raises:
        TaskFault: the module raises on import or lacks Model, get_inputs or get_init_inputs.
    """
    try:
        module = import_file(TASK_MODULE, path)
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


def flatten_output(value: Any) -> list[torch.Tensor]:
    """The tensors a forward returned, in order.

    Raises:
        ShadowedTensor: an output carries attributes of its own.
        TypeError: the forward returned something other than tensors.
    """
    if isinstance(value, torch.Tensor):
        tensors = [value]
    elif isinstance(value, list | tuple) and value and all(isinstance(v, torch.Tensor) for v in value):
        tensors = list(value)
    else:
        raise TypeError(f"forward must return a torch.Tensor (or a tuple of them), not {type(value).__name__}")
    for index, tensor in enumerate(tensors):
        if type(tensor) not in (torch.Tensor, torch.nn.Parameter):
            # before anything is read from it: a subclass answers every method and attribute itself
            raise TypeError(f"output {index} is a {type(tensor).__name__}, not a plain torch.Tensor")
        names = own_attributes(tensor)
        if names:
            raise ShadowedTensor(
                f"You cannot set attributes on the tensors you return: output {index} carries "
                f"{', '.join(names[:5])}. Return plain tensors."
            )
        if tensor.is_nested:
            raise TypeError(f"output {index} is a nested tensor; forward must return ordinary dense tensors")
        if tensor.layout is not torch.strided:
            raise TypeError(
                f"output {index} has layout {str(tensor.layout).removeprefix('torch.')}; forward must return "
                "ordinary dense tensors (call .to_dense())"
            )
        if not exchangeable(tensor.dtype):
            raise TypeError(
                f"output {index} has dtype {str(tensor.dtype).removeprefix('torch.')}, which cannot be compared; "
                "return the reference's dtype"
            )
    return tensors
