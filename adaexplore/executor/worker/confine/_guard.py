"""Proof that the candidate left the process as it found it: global numeric flags, the functions the
evaluator measures and copies with, the code of the evaluator's own worker modules and of the classes it
times and launches with, Triton's launch hooks, and the number of threads."""

from __future__ import annotations

import sys
import threading
import time
import types
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import triton
from triton.backends.nvidia.compiler import CUDABackend
from triton.compiler.code_generator import CodeGenerator
from triton.language.semantic import TritonSemantic
from triton.runtime.autotuner import Autotuner
from triton.runtime.interpreter import (
    FunctionRewriter,
    GridExecutor,
    InterpretedFunction,
    InterpreterBuilder,
    ReduceOps,
    ScanOps,
)
from triton.runtime.jit import DependenciesFinder, JITFunction

from adaexplore.domain import AuditFlag

__all__ = ["Guard"]


def _flags() -> dict[str, Any]:
    matmul = torch.backends.cuda.matmul
    flags: dict[str, Any] = {
        "torch.backends.cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
        "torch.backends.cudnn.benchmark": torch.backends.cudnn.benchmark,
        "torch.backends.cudnn.deterministic": torch.backends.cudnn.deterministic,
        "torch.backends.cudnn.enabled": torch.backends.cudnn.enabled,
        "torch.backends.cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction": (
            matmul.allow_fp16_reduced_precision_reduction
        ),
        "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction": (
            matmul.allow_bf16_reduced_precision_reduction
        ),
        "torch.get_float32_matmul_precision()": torch.get_float32_matmul_precision(),
        "torch.are_deterministic_algorithms_enabled()": torch.are_deterministic_algorithms_enabled(),
        "torch.get_default_dtype()": torch.get_default_dtype(),
        "torch.get_num_threads()": torch.get_num_threads(),
    }
    return flags


# PyTorch's own lazy wrapper (torch._disable_dynamo): importing torch._dynamo, which PyTorch's reference ops do at
# their first call on `meta` tensors (the full-size compile pass), wraps torch.manual_seed in it.
_DYNAMO_WRAPPER_CODE = torch._disable_dynamo(lambda: None).__code__


def _unwrapped(fn: Any) -> Any:
    """`fn` itself, or the function that PyTorch's lazy dynamo wrapper around it calls: the one its closure holds,
    not what its `__wrapped__` says, which anyone can set."""
    if getattr(fn, "__code__", None) is not _DYNAMO_WRAPPER_CODE or fn.__closure__ is None:
        return fn
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__, strict=True))
    return cells["fn"].cell_contents if "fn" in cells else fn


# What the evaluator calls after the candidate is imported; replacing any of them could forge a result.
_WATCHED: dict[str, Callable[[], Any]] = {
    "time.perf_counter": lambda: time.perf_counter,
    "torch.cuda.synchronize": lambda: torch.cuda.synchronize,
    "torch.cuda.Event": lambda: torch.cuda.Event,
    "torch.cuda.Event.record": lambda: torch.cuda.Event.record,
    "torch.cuda.Event.elapsed_time": lambda: torch.cuda.Event.elapsed_time,
    "torch.Tensor.clone": lambda: torch.Tensor.clone,
    "torch.Tensor.copy_": lambda: torch.Tensor.copy_,
    "torch.Tensor.to": lambda: torch.Tensor.to,
    "torch.Tensor.cpu": lambda: torch.Tensor.cpu,
    "torch.Tensor.contiguous": lambda: torch.Tensor.contiguous,
    "torch.Tensor.view": lambda: torch.Tensor.view,
    "torch.Tensor.numpy": lambda: torch.Tensor.numpy,
    "torch.Tensor.untyped_storage": lambda: torch.Tensor.untyped_storage,
    "torch.Tensor.__eq__": lambda: torch.Tensor.__eq__,
    "torch.equal": lambda: torch.equal,
    "torch.mul": lambda: torch.mul,
    "torch.manual_seed": lambda: _unwrapped(torch.manual_seed),
    "torch.nn.Module.__call__": lambda: torch.nn.Module.__call__,
    "torch.nn.Module.to": lambda: torch.nn.Module.to,
    "torch.no_grad": lambda: torch.no_grad,
    "numpy.ndarray": lambda: np.ndarray,
    "triton.runtime.jit.JITFunction.run": lambda: JITFunction.run,
    "triton.runtime.autotuner.Autotuner.run": lambda: Autotuner.run,
    "triton.knobs.runtime.launch_enter_hook": lambda: triton.knobs.runtime.launch_enter_hook,
    "triton.knobs.runtime.launch_exit_hook": lambda: triton.knobs.runtime.launch_exit_hook,
    "triton.knobs.runtime.jit_cache_hook": lambda: triton.knobs.runtime.jit_cache_hook,
}


# Classes whose methods the evaluator calls while it measures: a method replaced or added (torch.cuda.Event's
# __new__, say) changes what the evaluator's calls do without changing the class.
_WATCHED_CLASSES: dict[str, Callable[[], type]] = {
    "torch.cuda.Event": lambda: torch.cuda.Event,
    "torch.Tensor": lambda: torch.Tensor,
    "torch.nn.Module": lambda: torch.nn.Module,
    "triton.runtime.jit.JITFunction": lambda: JITFunction,
    "triton.runtime.autotuner.Autotuner": lambda: Autotuner,
    # its cast refuses pointers made from integers (_kernel_rules)
    "triton.language.semantic.TritonSemantic": lambda: TritonSemantic,
    # the context managers the evaluator enters around trials and timing
    "torch.no_grad": lambda: torch.no_grad,
    "torch.enable_grad": lambda: torch.enable_grad,
    "torch.inference_mode": lambda: torch.inference_mode,
    "torch.set_grad_enabled": lambda: torch.set_grad_enabled,
    "torch.cuda.device": lambda: torch.cuda.device,
    # Triton's interpreter and compiler as the evaluator patched them before the snapshot (worker/cpu/_interpret_shim.py
    # and the _interpret_* modules it installs, _launches.py, _kernel_sources.py, _compile_only.py): a candidate that
    # put its own methods there could run a kernel other than the one checked, or slip a call of kernel code past
    # the compile pass
    "triton.runtime.interpreter.InterpretedFunction": lambda: InterpretedFunction,
    "triton.runtime.interpreter.FunctionRewriter": lambda: FunctionRewriter,
    "triton.compiler.code_generator.CodeGenerator": lambda: CodeGenerator,
    "triton.runtime.jit.DependenciesFinder": lambda: DependenciesFinder,
    # what else the worker patched (worker/confine/_patches.py lists each patch): the interpreter's operations, whose
    # patches check bounds and compute bf16 as the GPU does, and the compiler's ptxas step, read for the static cost
    "triton.runtime.interpreter.InterpreterBuilder": lambda: InterpreterBuilder,
    "triton.runtime.interpreter.GridExecutor": lambda: GridExecutor,
    "triton.runtime.interpreter.ReduceOps": lambda: ReduceOps,
    "triton.runtime.interpreter.ScanOps": lambda: ScanOps,
    "triton.backends.nvidia.compiler.CUDABackend": lambda: CUDABackend,
}
_CONSTANT = (int, float, str, bytes, bool, tuple, frozenset, type(None))


def _is_code(value: object) -> bool:
    """Functions, classes and descriptors of every kind (C method descriptors, properties, slots)."""
    return callable(value) or hasattr(type(value), "__get__")


def _tracked(name: str, value: object, module: bool) -> bool:
    """Whether the Guard follows a name of a namespace: code of every kind; in a module also the modules,
    containers and objects it holds for its whole life (`statistics` in the timer, a table of rules), and
    its immutable values named in capitals (its limits, not its counters)."""
    if _is_code(value):
        return True
    if not module:
        return False
    if isinstance(value, _CONSTANT):
        return name.lstrip("_").isupper()
    return True


def _code_of(namespace: Any, module: bool) -> dict[str, int]:
    """Identities of what the Guard follows in a namespace: what a replaced method, module or limit would
    show in."""
    return {name: id(value) for name, value in list(namespace.items()) if _tracked(name, value, module)}


def _namespaces() -> dict[str, tuple[Any, bool]]:
    """The namespaces the Guard compares: the watched classes, and every loaded module of the evaluator's worker
    with the classes it defines (their code and constants, e.g. LaunchTracker.count or Timer.measure)."""
    found: dict[str, tuple[Any, bool]] = {}
    for name, get in _WATCHED_CLASSES.items():
        # the class and the bases its methods live in (torch.Tensor's are in torch._C.TensorBase)
        for cls in get().__mro__[:-1]:
            found.setdefault(name if cls is get() else f"{cls.__module__}.{cls.__qualname__}", (vars(cls), False))
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("adaexplore.") or module is None:
            continue
        found[module_name] = (vars(module), True)
        for name, value in list(vars(module).items()):
            if isinstance(value, type) and value.__module__ == module_name:
                found[f"{module_name}.{name}"] = (vars(value), False)
    return found


class Guard:
    """A snapshot taken before the candidate is imported, compared after each step it takes."""

    def __init__(self, extra_checks: Callable[[], list[AuditFlag]] | None = None) -> None:
        self._flags = _flags()
        self._ids = {name: id(get()) for name, get in _WATCHED.items()}
        self._threads = threading.active_count()
        self._extra = extra_checks
        self._spaces = _namespaces()
        self._code = {name: _code_of(space, constants) for name, (space, constants) in self._spaces.items()}

    def check(self, where: str) -> list[AuditFlag]:
        """Reject flags for everything that changed since the snapshot; `where` names the step."""
        found: list[AuditFlag] = []
        now = _flags()
        for name, before in self._flags.items():
            if now[name] != before:
                found.append(
                    AuditFlag(
                        code="global_flag_changed",
                        severity="reject",
                        message=f"You cannot change global settings: {name} went from {before!r} to {now[name]!r} "
                        f"during {where}. The evaluator fixes numerics for reference and candidate alike.",
                    )
                )
        for name, get in _WATCHED.items():
            if id(get()) != self._ids[name]:
                found.append(
                    AuditFlag(
                        code="monkey_patch",
                        severity="reject",
                        message=f"You cannot replace {name} (changed during {where}); the evaluator relies on it.",
                    )
                )
        for space_name, (space, constants) in self._spaces.items():
            before_code = self._code[space_name]
            now_code = _code_of(space, constants)
            changed = sorted(
                {name for name in before_code if now_code.get(name) != before_code[name]}
                # (a package gains its submodules as they are first imported)
                | {n for n in now_code if n not in before_code and not isinstance(space.get(n), types.ModuleType)}
            )
            if changed:
                found.append(
                    AuditFlag(
                        code="monkey_patch",
                        severity="reject",
                        message=f"You cannot replace or add {', '.join(f'{space_name}.{n}' for n in changed[:5])} "
                        f"(changed during {where}); the evaluator relies on it.",
                    )
                )
        threads = threading.active_count()
        if threads > self._threads:
            found.append(
                AuditFlag(
                    code="thread_started",
                    severity="reject",
                    message=f"You cannot start threads: {threads - self._threads} new thread(s) were running after "
                    f"{where}. Do all work inside forward on the calling thread.",
                )
            )
        if self._extra is not None:
            found.extend(self._extra())
        return found
