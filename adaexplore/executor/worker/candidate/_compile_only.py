"""A stand-in Triton driver that compiles for a GPU target without a GPU.

With it active, every launch runs the real Triton compiler down to a cubin for the target (sm_90 by
default) and launches nothing, so a machine without a GPU reports the compile errors and resource
use that the GPU would. Outputs of the kernels are never written.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from triton import knobs
from triton.backends.compiler import GPUTarget
from triton.backends.driver import DriverBase
from triton.runtime.driver import driver
from triton.runtime.jit import JITFunction

from adaexplore.executor.worker.confine._faults import HostCallOfKernelCode

__all__ = ["activate_compile_only", "compile_launch", "compiling_for", "install_mirrors", "mirror", "parse_target"]


def parse_target(target: str) -> GPUTarget:
    """`"cuda:90"` -> GPUTarget("cuda", 90, 32)."""
    backend, _, arch = target.partition(":")
    if backend != "cuda" or not arch.isdigit():
        raise ValueError(f"compile target must look like 'cuda:90', not {target!r}")
    return GPUTarget("cuda", int(arch), 32)


class _CompileOnlyDriver(DriverBase):
    def __init__(self, target: GPUTarget) -> None:
        super().__init__()
        self._target = target

    @classmethod
    def is_active(cls) -> bool:
        return True

    def map_python_to_cpp_type(self, ty: str) -> str:
        from triton.backends.nvidia.driver import ty_to_cpp

        return ty_to_cpp(ty)

    def get_current_target(self) -> GPUTarget:
        return self._target

    def get_active_torch_device(self) -> torch.device:
        return torch.device("cpu")

    def get_benchmarker(self):
        # Autotuning compiles each config through the launches it benchmarks; the times are meaningless.
        def bench(fn, quantiles=None, **_):
            fn()
            return [1.0] * len(quantiles) if quantiles else 1.0

        return bench

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device: int) -> None:
        return None

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def get_device_interface(self):
        return torch.cuda


def activate_compile_only(target: str = "cuda:90") -> None:
    """Make the compile-only driver Triton's active driver. Launches must be forced to `warmup=True`."""
    driver.set_active(_CompileOnlyDriver(parse_target(target)))


# ---- compiling beside the interpreter ----------------------------------------------------------------
# Under TRITON_INTERPRET=1 every `@triton.jit` function, Triton's own library (tl.max, tl.sum, tl.cdiv ...)
# included, is an InterpretedFunction, which Triton's compiler does not know. While a kernel the interpreter
# runs is compiled for the GPU, each one the compiler meets is replaced by a JITFunction of the same Python
# function, made once.
_mirrors: dict[int, tuple[Any, JITFunction]] = {}


def mirror(value: Any) -> Any:
    """The JITFunction standing for an InterpretedFunction (made once per function); anything else as it is."""
    from triton.runtime.interpreter import InterpretedFunction

    if not isinstance(value, InterpretedFunction):
        return value
    held = _mirrors.get(id(value))
    if held is None or held[0] is not value:
        held = (value, JITFunction(value.fn, **value.kwargs))
        _mirrors[id(value)] = held
    return held[1]


def _member_function(found: Any) -> Any:
    """The InterpretedFunction behind a tensor method (`x.sum`): under the interpreter Triton adds its library's
    functions to the tensor class as plain wrappers that call them."""
    from triton.runtime.interpreter import InterpretedFunction

    for cell in getattr(getattr(found, "__func__", None), "__closure__", None) or ():
        if isinstance(cell.cell_contents, InterpretedFunction):
            return cell.cell_contents
    return found


class _MirroringScope(dict[str, Any]):
    """A kernel's globals as the compiler looks them up, InterpretedFunctions read as their mirrors."""

    def get(self, key: str, default: Any = None) -> Any:
        return mirror(super().get(key, default))

    def __getitem__(self, key: str) -> Any:
        return mirror(super().__getitem__(key))


def _install_mirrors() -> None:
    from triton.compiler import code_generator as cg
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import DependenciesFinder

    generator = cg.CodeGenerator
    call = InterpretedFunction.__call__
    init, visit, get_attribute = generator.__init__, generator.visit, generator.get_Attribute
    call_function, record_reference = generator.call_Function, DependenciesFinder.record_reference

    def init_mirrored(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.gscope = _MirroringScope(self.gscope)

    def visit_mirrored(self: Any, node: Any) -> Any:
        return mirror(visit(self, node))

    def get_attribute_mirrored(self: Any, lhs: Any, attr: str) -> Any:
        found = get_attribute(self, lhs, attr)
        standing = mirror(_member_function(found))
        if standing is not found and cg._is_triton_value(lhs):
            return cg.BoundJITMethod(lhs, standing)
        return mirror(found)

    def call_function_mirrored(self: Any, node: Any, fn: Any, args: Any, kws: Any) -> Any:
        return call_function(self, node, mirror(fn), [mirror(a) for a in args], {k: mirror(v) for k, v in kws.items()})

    def record_reference_mirrored(self: Any, val: Any, *args: Any, **kwargs: Any) -> Any:
        return record_reference(self, mirror(val), *args, **kwargs)

    def call_outside(ifn: InterpretedFunction, *args: Any, **kwargs: Any) -> Any:
        if _compiling:
            # The compiler reaches kernels through their mirrors and calls none: this is host code run while a
            # launch's arguments are bound (a `data_ptr` of the candidate's own), which a GPU's Triton refuses.
            raise HostCallOfKernelCode(ifn.__name__)
        return call(ifn, *args, **kwargs)

    InterpretedFunction.__call__ = call_outside
    generator.__init__ = init_mirrored
    generator.visit = visit_mirrored
    generator.get_Attribute = get_attribute_mirrored
    generator.call_Function = call_function_mirrored
    DependenciesFinder.record_reference = record_reference_mirrored


_mirrors_installed = False
_compiling = False


def install_mirrors() -> None:
    """Patch Triton's compiler to read InterpretedFunctions as their mirrors (once per process): done before the
    guard notes Triton's classes as they are, since it watches them."""
    global _mirrors_installed
    if not _mirrors_installed:
        _install_mirrors()
        _mirrors_installed = True


@contextlib.contextmanager
def compiling_for(target: str = "cuda:90") -> Iterator[None]:
    """Inside, Triton compiles for `target` through the compile-only driver, as the `compile` backend does, even
    in a process running the interpreter (whose kernels are InterpretedFunctions: see `mirror`)."""
    global _compiling
    install_mirrors()
    saved = driver._active
    driver.set_active(_CompileOnlyDriver(parse_target(target)))
    _compiling = True
    try:
        with knobs.runtime.scope():
            # what Triton's constexpr functions read to return plain values to the interpreter
            knobs.runtime.interpret = False
            yield
    finally:
        _compiling = False
        driver._active = saved


def compile_launch(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], target: str = "cuda:90") -> bool:
    """Compile, for `target`, what launching the InterpretedFunction `fn` with `args` and `kwargs` would run on a
    GPU: the same Python function with the same argument types, constexprs and options. True when this
    specialization was compiled now, False when it had been already. Raises what the compiler raises."""
    kernel = mirror(fn)
    with compiling_for(target):
        device = driver.active.get_current_device()
        before = len(kernel.device_caches[device][0])
        kernel.run(*args, grid=(1,), warmup=True, **kwargs)
        return len(kernel.device_caches[device][0]) > before
