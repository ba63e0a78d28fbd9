"""The task at its full sizes as shapes only: the model and inputs on PyTorch's `meta` device, which holds
shapes, strides and dtypes and allocates nothing, so a compile-only pass can specialize every kernel as the GPU
will at sizes that would take gigabytes.

Triton reads a launch's argument types, a pointer's 16-byte alignment (a meta tensor's address is 0, aligned
as every CUDA allocation is), integers' values and constexprs; it never reads the data, which the compile-only
driver never writes either.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from adaexplore.domain import SizeValue, Status
from adaexplore.executor.tasks._small_sizes import BATCH_NAME as _BATCH
from adaexplore.executor.worker.confine._errors import classify
from adaexplore.executor.worker.confine._faults import TaskFault
from adaexplore.executor.worker.confine._importing import import_file
from adaexplore.executor.worker.cost._work_record import task_work
from adaexplore.executor.worker.task._taskrun import load_task_module
from adaexplore.roofline import TaskWork

__all__ = [
    "FULL_TASK_MODULE",
    "META",
    "REDUCTION_CAP",
    "full_size_args",
    "full_size_pass",
    "reduction_sizes",
    "reference_work",
    "shape_only",
]

FULL_TASK_MODULE = "adaexplore_task_full_sizes"
META = torch.device("meta")


def _to_meta(device: Any) -> Any:
    if isinstance(device, torch.device | str) or (isinstance(device, int) and not isinstance(device, bool)):
        return META
    return device


class _OnMeta(TorchFunctionMode):
    """Every tensor made or moved lands on `meta`: `device="cuda"`, `.cuda()`, `.cpu()` and `.to(device)`."""

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = dict(kwargs or {})
        if func in (torch.Tensor.cuda, torch.Tensor.cpu):
            return args[0].to(META) if args[0].device != META else args[0]
        if "device" in kwargs and kwargs["device"] is not None:
            kwargs["device"] = _to_meta(kwargs["device"])
        if func is torch.Tensor.to and len(args) > 1 and isinstance(args[1], str | torch.device | int):
            args = (args[0], META, *args[2:])
        return func(*args, **kwargs)


@contextlib.contextmanager
def shape_only() -> Iterator[None]:
    """Inside, the default device is `meta` and every device named means it; `torch.cuda.synchronize()` returns
    and `x.is_cuda` is true for meta tensors, so code written for the GPU runs its host side unchanged."""
    saved_sync, saved_is_cuda = torch.cuda.synchronize, torch.Tensor.is_cuda
    saved_cuda = torch.nn.Module.cuda
    torch.cuda.synchronize = lambda *args, **kwargs: None
    torch.nn.Module.cuda = lambda self, device=None: self  # type: ignore[method-assign]  # patched on purpose
    torch.Tensor.is_cuda = property(lambda self: self.device.type in ("cpu", "cuda", "meta"))  # type: ignore[assignment]  # patched on purpose
    try:
        with META, _OnMeta():
            yield
    finally:
        torch.cuda.synchronize = saved_sync
        torch.nn.Module.cuda = saved_cuda  # type: ignore[method-assign]  # restored
        torch.Tensor.is_cuda = saved_is_cuda


def _cast(value: Any, cast: torch.dtype | None) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(dtype=cast) if cast is not None and value.is_floating_point() else value
    if isinstance(value, list | tuple):
        return type(value)(_cast(v, cast) for v in value)
    return value


def full_size_args(task_path: str, cast: torch.dtype | None) -> tuple[list[Any], list[Any]]:
    """`get_init_inputs()` and `get_inputs()` of the task at its own (full) sizes, tensors on `meta`. Call inside
    `shape_only()`.

    Raises:
        TaskFault: the task module raised on import, or its functions raised or returned no list.
    """
    return _full_size_task(task_path, cast)[1:]


def _full_size_task(task_path: str, cast: torch.dtype | None) -> tuple[Any, list[Any], list[Any]]:
    try:
        task = import_file(FULL_TASK_MODULE, task_path)
    except Exception as exc:
        raise TaskFault(f"the task module raised on import: {type(exc).__name__}: {exc}") from exc
    made = []
    for name in ("get_init_inputs", "get_inputs"):
        try:
            values = getattr(task, name)()
        except Exception as exc:
            raise TaskFault(f"{name}() raised {type(exc).__name__} at the full sizes: {exc}") from exc
        if not isinstance(values, list | tuple):
            raise TaskFault(f"{name}() must return a list or tuple, not {type(values).__name__}")
        made.append(list(_cast(list(values), cast)))
    return task, made[0], made[1]


# the longest reduction a precision check runs at (a dot over K = 8192 is a Level 2 GEMM's)
REDUCTION_CAP = 16384
# the outputs a precision check compares at least, where a larger batch gives them: a normwise error measured on
# a few dozen elements is off by a sixth; rows of a GEMM's tile cost nothing more to compute
CHECKED_ELEMENTS = 256
_SHAPES_MODULE = "adaexplore_task_shapes"


def _output_shapes(task_path: str, sizes: Mapping[str, SizeValue], cast: torch.dtype | None) -> list[tuple[int, ...]]:
    with shape_only(), torch.no_grad():
        task = load_task_module(task_path, sizes, name=_SHAPES_MODULE)
        init_args = [_cast(v, cast) for v in task.get_init_inputs()]
        model = task.Model(*init_args)
        out = model(*[_cast(v, cast) for v in task.get_inputs()])
    found = out if isinstance(out, list | tuple) else [out]
    return [tuple(t.shape) for t in found if isinstance(t, torch.Tensor)]


def reduction_sizes(
    task_path: str, small: Mapping[str, SizeValue], cast: torch.dtype | None
) -> tuple[dict[str, SizeValue] | None, list[str]]:
    """The small sizes with every size the outputs' shapes do not depend on (a GEMM's in_features, a convolution's
    in_channels: what a dot reduces over) back at the module's own value (at most REDUCTION_CAP), and the names of
    those sizes; (None, []) where no such size was made small. Found on shape-only tensors: each small size in
    turn is doubled, and one whose doubling leaves every output's shape as it was is reduced over."""
    try:
        with shape_only():
            full = load_task_module(task_path, None, name=_SHAPES_MODULE)
        base = _output_shapes(task_path, small, cast)
    except Exception:
        return None, []
    restored: dict[str, SizeValue] = {}
    for name, value in small.items():
        own = getattr(full, name, None)
        if not isinstance(value, int) or not isinstance(own, int) or isinstance(own, bool) or own <= value:
            continue
        try:
            if _output_shapes(task_path, {**small, name: value * 2}, cast) == base:
                restored[name] = min(own, REDUCTION_CAP)
        except Exception:
            continue
    if not restored:
        return None, []
    sizes = {**small, **restored}
    batch = next((n for n in small if _BATCH.search(n) and isinstance(small[n], int)), None)
    elements = sum(math.prod(shape) for shape in base)
    if batch is not None and 0 < elements < CHECKED_ELEMENTS:
        own = getattr(full, batch, None)
        value = int(small[batch])  # type: ignore[arg-type]  # an int: found so above
        if isinstance(own, int) and own > value:
            sizes[batch] = min(own, value * math.ceil(CHECKED_ELEMENTS / elements), 64)
    return sizes, sorted(restored)


def reference_work(task_path: str, cast: torch.dtype | None) -> tuple[TaskWork | None, str]:
    """What the task's reference does at its full sizes (see `_work_record.task_work`), recorded on shape-only
    tensors; None and the reason where its module, Model or inputs cannot be made so."""
    try:
        with shape_only(), torch.no_grad():
            task, init_args, inputs = _full_size_task(task_path, cast)
            model = task.Model(*init_args)
            if cast is not None:
                model = model.to(dtype=cast)
            return task_work(model, inputs), ""
    except Exception as exc:
        return None, f"the reference could not be built on shape-only tensors: {type(exc).__name__}: {exc}"[:300]


def full_size_pass(
    tracker: Any, model_cls: type[torch.nn.Module], task_path: str, cast: torch.dtype | None, coverage: Any = None
) -> tuple[str, list[Any], Any]:
    """Compile every kernel one forward launches at the task's full sizes, on shape-only tensors, through
    `tracker` (compile-only), recording what the forward does (`tracker.recording_work`) and, given a
    `_coverage.CoverageRecorder`, whether it writes every element of its outputs. Returns "" when the pass went
    through the whole forward, else why it stopped early (host code that needs real data, such as `.item()`;
    kernels launched after that were not compiled), the record, and the coverage (None: not followed).

    Raises:
        what the compiler raised for a kernel at the full sizes (the candidate's compile error).
    """
    small_shared, small_compiles = dict(tracker.shared_memory), dict(tracker.target_compiles)
    tracker.sizes, tracker.shared_memory = "full", {}
    compile_only, tracker.compile_only = tracker.compile_only, True
    reason = ""
    steps: list[Any] = []
    out: Any = None
    watching = coverage.watching() if coverage is not None else contextlib.nullcontext()
    tracker.coverage = coverage
    try:
        with shape_only(), torch.no_grad(), watching:
            try:
                init_args, inputs = full_size_args(task_path, cast)
                model = model_cls(*init_args)
                if cast is not None:
                    model = model.to(dtype=cast)
            except TaskFault as exc:
                reason = f"the task's inputs could not be made as shapes only: {exc}"
            except Exception as exc:
                reason = f"ModelNew(*get_init_inputs()) raised {type(exc).__name__} on shape-only tensors: {exc}"
            if not reason:
                try:
                    with tracker.recording_work() as steps:
                        out, _ = tracker.count(lambda: model(*inputs))
                except Exception as exc:
                    if classify(exc) in (Status.compile_error, Status.infra_error):
                        raise
                    reason = f"forward raised {type(exc).__name__} on shape-only tensors: {str(exc)[:300]}"
    finally:
        tracker.coverage = None
        tracker.compile_only = compile_only
        tracker.target_compiles = small_compiles  # these count the small sizes, as their flag says
        # the GPU runs the full sizes: their shared memory is the kernel's; a kernel the pass did not reach
        # keeps its small-size number
        for name, used in small_shared.items():
            tracker.shared_memory.setdefault(name, used)
    covered = coverage.report(out) if coverage is not None and not reason else None
    return reason, steps, covered
