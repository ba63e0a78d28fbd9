"""Running a task module inside a worker: its sizes, seeds, inputs, models and outputs (`_importing` imports
the file)."""

from __future__ import annotations

import ast
import contextlib
import copy
import importlib.util
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from adaexplore.domain import SizeValue
from adaexplore.executor.wire._protocol import JobSpec
from adaexplore.executor.worker.confine._faults import TaskFault
from adaexplore.executor.worker.confine._importing import import_file
from adaexplore.executor.worker.exchange._exchange import exchangeable

__all__ = [
    "TASK_MODULE",
    "ShadowedTensor",
    "build_model",
    "clone_args",
    "derive_seeds",
    "draw_args",
    "flatten_output",
    "load_task_module",
    "make_args",
    "own_attributes",
    "place_args",
    "rebuilt",
    "resolve_seeds",
    "seed_forward",
    "tensors_in",
    "upcast",
    "upcast_copy",
]

TASK_MODULE = "adaexplore_task"


def _size_node(value: SizeValue, like: ast.expr) -> ast.expr:
    """The literal of a small size, where `like` stood: a list of sizes as a tuple where the module wrote one."""
    if isinstance(value, list):
        elements: list[ast.expr] = [ast.Constant(v) for v in value]
        node: ast.expr = (
            ast.Tuple(elements, ast.Load()) if isinstance(like, ast.Tuple) else ast.List(elements, ast.Load())
        )
        return ast.copy_location(node, like)
    return ast.copy_location(ast.Constant(value), like)


def _sized_code(path: str, sizes: Mapping[str, SizeValue]) -> Any:
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
                owner.value = _size_node(sizes[target.id], value)
            elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
                for i, element in enumerate(target.elts):
                    if isinstance(element, ast.Name) and element.id in sizes:
                        value.elts[i] = _size_node(sizes[element.id], value.elts[i])
    return compile(ast.fix_missing_locations(tree), path, "exec", dont_inherit=True)


def load_task_module(path: str, small_sizes: Mapping[str, SizeValue] | None, *, name: str = TASK_MODULE) -> ModuleType:
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
    except ModuleNotFoundError as exc:
        # a third-party package the task imports (the Mamba2 problems' einops): the task's need, not a fault of ours
        needed = (exc.name or "").split(".")[0]
        if not needed:
            raise TaskFault(f"the task module raised on import: {type(exc).__name__}: {exc}") from exc
        raise TaskFault(f"the task needs {needed}, which is not installed here: pip install {needed}") from exc
    except Exception as exc:
        raise TaskFault(f"the task module raised on import: {type(exc).__name__}: {exc}") from exc
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not callable(getattr(module, name, None)):
            raise TaskFault(f"the task module defines no callable {name}")
    for name, value in (small_sizes or {}).items():
        if not hasattr(module, name):
            raise TaskFault(f"SMALL_SIZES names {name!r}, which the task module does not define")
        setattr(module, name, _as_kind(value, getattr(module, name)))
    return module


def _as_kind(value: SizeValue, current: object) -> object:
    """A small list of sizes as the kind of sequence the module holds (a tuple stays a tuple)."""
    return tuple(value) if isinstance(value, list) and isinstance(current, tuple) else value


def _same_kind(current: object, value: SizeValue) -> bool:
    if isinstance(value, list):
        return (
            type(current) in (list, tuple)
            and len(current) == len(value)  # type: ignore[arg-type]
            and all(type(e) is int for e in current)  # type: ignore[attr-defined]
        )
    return type(current) in (int, float) and type(current) is type(value)


def shrink_globals(module: ModuleType, small_sizes: Mapping[str, SizeValue]) -> list[str]:
    """Give a candidate's module the task's small sizes where it has size globals of its own: a candidate is often
    the task's model rewritten, with the task's module-level sizes copied along (a vanilla RNN's `batch_size`,
    read by its constructor), and those must shrink with the task's or the model is built at full size against
    small inputs. Only a name the module binds to a number of the same kind (or to a list or tuple of as many
    integers) is set; names the module computed from it at import stay as they are. Returns the names set."""
    shrunk = []
    for name, value in small_sizes.items():
        current = module.__dict__.get(name)
        if _same_kind(current, value):
            module.__dict__[name] = _as_kind(value, current)
            shrunk.append(name)
    return shrunk


def derive_seeds(base: int, count: int) -> list[int]:
    """Trial seeds drawn as KernelBench draws them: seed `base`, then one randint(0, 2**32 - 1) per trial."""
    torch.manual_seed(base)
    return [int(torch.randint(0, 2**32 - 1, (1,)).item()) for _ in range(count)]


def seed_forward(seed: int) -> None:
    """Seed every generator (the CPU's and each GPU's) right before a forward whose outputs are compared, with its
    trial's seed, on the judge's side and the candidate's alike: a task that draws random numbers inside forward
    (an LSTM's initial state from `torch.randn`) then draws the same ones for the reference and for a candidate
    that draws them the same way, on the CPU and on a GPU (the CUDA generator is seeded too)."""
    torch.manual_seed(seed)


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


def draw_args(
    module: ModuleType, fn_name: str, seed: int, device: torch.device | None = None, *, on_device: bool = False
) -> list[Any]:
    """Call `get_inputs` or `get_init_inputs` under `seed`; the values where it made them (with `on_device`, a
    CUDA `device` only, the function runs with `device` as default device, so values are drawn there).

    Raises:
        TaskFault: the function raised or did not return a list or tuple.
    """
    torch.manual_seed(seed)
    try:
        with _drawing_on(device, on_device) if device is not None else contextlib.nullcontext():
            values = getattr(module, fn_name)()
    except Exception as exc:
        raise TaskFault(f"{fn_name}() raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(values, list | tuple):
        raise TaskFault(f"{fn_name}() must return a list or tuple, not {type(values).__name__}")
    return list(values)


def place_args(values: list[Any], device: torch.device, cast: torch.dtype | None) -> list[Any]:
    """Drawn values moved to `device` (floating tensors cast to `cast`)."""
    return [_place(v, device, cast) for v in values]


def make_args(
    module: ModuleType,
    fn_name: str,
    seed: int,
    device: torch.device,
    cast: torch.dtype | None,
    *,
    on_device: bool = False,
) -> list[Any]:
    """`draw_args`, moved to `device` and cast (`place_args`).

    Raises:
        TaskFault: the function raised or did not return a list or tuple.
    """
    return place_args(draw_args(module, fn_name, seed, device, on_device=on_device), device, cast)


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
    """A float64 copy of `model` for the high-precision reference: its parameters and buffers, and the floating
    tensors its modules hold as plain attributes (a state made in the constructor, `self.h0 = torch.randn(...)`),
    which `Module.to` leaves in their dtype."""
    copied = copy.deepcopy(model).to(dtype=torch.float64)
    for module in copied.modules():
        for name, value in list(vars(module).items()):
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                setattr(module, name, value.to(torch.float64))
    return copied


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
    from adaexplore.executor.worker.confine._faults import DisguisedOutput, OutputNotTensors

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
