"""Closes the gaps of Triton's interpreter (`TRITON_INTERPRET=1`) so that it judges numerics like a GPU.

The plain interpreter cannot autotune without a driver, has no libdevice, computes bfloat16 on raw
bit patterns, truncates where the GPU rounds, computes fp32 `tl.dot` exactly where the GPU reads TF32 operands,
ignores `tl.device_assert`, reads or writes any address it is given, and copies its own modules (inspect,
numpy ...) into the module that defines a kernel, and with numpy 2.4 or later cannot use a scalar argument as
a loop bound. Each patch fixes one of these. They rely on interpreter internals, which is why triton is
pinned. This module holds the patches of how the interpreter runs a kernel (autotuning, the kernel's namespace
and source, scalars as indices, a device function's call); `_interpret_bf16` those of its arithmetic,
`_interpret_libdevice` libdevice, and `_interpret_checks` device_assert and bounds checking.

`install()` must run after `TRITON_INTERPRET=1` is set and before the candidate module is imported.
"""

from __future__ import annotations

import ast
import textwrap
import time
from collections.abc import Callable
from typing import Any

import triton
from triton.runtime import autotuner as _autotuner
from triton.runtime import interpreter as _interp

from adaexplore.executor.worker.confine._faults import HostCallOfKernelCode
from adaexplore.executor.worker.cpu._interpret_bf16 import install_bf16_and_tf32
from adaexplore.executor.worker.cpu._interpret_checks import install_bounds_checker, install_device_assert
from adaexplore.executor.worker.cpu._interpret_libdevice import in_kernel, install_kernel_tracking, install_libdevice

__all__ = ["first_config_only", "install"]


# ---- autotuning without a driver ---------------------------------------------------------------
def _cpu_bench(fn: Callable[[], Any], quantiles: Any = None, **_: Any) -> Any:
    start = time.perf_counter()
    fn()
    ms = (time.perf_counter() - start) * 1e3
    return [ms] * len(quantiles) if quantiles else ms


def _install_autotune() -> None:
    _autotuner.Autotuner.do_bench = property(lambda self: _cpu_bench)


def _no_bench(fn: Callable[[], Any], quantiles: Any = None, **_: Any) -> Any:
    return [0.0] * len(quantiles) if quantiles else 0.0


def first_config_only() -> None:
    """From now on an autotuned kernel runs its first config alone, once: neither that config nor any other is
    run to time it (the autotuner would run its one config to time it, then again for the result)."""
    prune = _autotuner.Autotuner.prune_configs

    def first(self: Any, kwargs: Any, *args: Any, **more: Any) -> Any:
        return prune(self, kwargs, *args, **more)[:1]

    _autotuner.Autotuner.prune_configs = first
    _autotuner.Autotuner.do_bench = property(lambda self: _no_bench)


# ---- the rewritten kernel gets the one name it needs, not the interpreter's namespace -----------------
# Triton's rewriter copies every global of its own module (inspect, numpy, ast ...) into the module that defines
# the kernel, so the candidate's module would hold them after its first launch. The one name the rewritten code
# uses is renamed to a special name, which a candidate cannot write, and only that name is added.
_SEMANTIC = "__adaexplore_interpreter_semantic__"


class _RenameSemantic(ast.NodeTransformer):
    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id == "interpreter_semantic":
            node.id = _SEMANTIC
        return node


def _install_namespace_guard() -> None:
    def _compile_and_exec(self: Any, transformed_ast: ast.Module) -> Any:
        code = compile(_RenameSemantic().visit(transformed_ast), filename=self.filename, mode="exec")
        local_namespace = {**self.kwargs}
        fn_globals = self.fn.__globals__
        fn_globals[_SEMANTIC] = _interp.interpreter_semantic
        exec(code, fn_globals, local_namespace)
        return local_namespace[self.fn.__name__]

    _interp.FunctionRewriter._compile_and_exec = _compile_and_exec


def _install_def_finder() -> None:
    """The interpreter cuts a kernel's source at the last line that starts with `def`, which may be a line in
    a string of its body or a nested function: it would run code other than the kernel. Cut it at the
    kernel's own def line."""

    def _find_def(self: Any, lines: list[str]) -> int:
        tree = ast.parse(textwrap.dedent("".join(lines)))
        return tree.body[0].lineno

    _interp.FunctionRewriter._find_def = _find_def


# ---- scalars as integers with any numpy ---------------------------------------------------------
# The interpreter keeps a scalar argument as a one-element array and turns it into a Python int with `int(array)`
# whenever Python asks for an index (`range(0, K, BK)`, slicing). numpy 2.4 made that conversion an error for
# arrays of one dimension, so every kernel that loops up to a runtime size would fail there, as if by its own
# fault. The launch-time patch of `tl.tensor` is wrapped to convert through `.item()`, as every numpy allows.


def _install_index_conversion() -> None:
    patch_lang_tensor = _interp._patch_lang_tensor

    def _patch_lang_tensor(tensor: Any, scope: Any) -> None:
        patch_lang_tensor(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.item()))

    _interp._patch_lang_tensor = _patch_lang_tensor


# ---- a device function's patches undone when it returns ----------------------------------------------
# The interpreter patches Triton's language (tl.program_id, tl.core.reduce ...) for every call of a device
# function and never restores it, so after a kernel that calls one, code outside the interpreter (the compile
# for the GPU of each launch, see _launches) met the interpreter's versions. The call restores them.


def _install_device_call_scope() -> None:
    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not in_kernel():
            # host code calling a kernel's function: the interpreter would run it, a GPU's Triton refuses it
            raise HostCallOfKernelCode(self.__name__)
        scope = _interp._patch_lang(self.fn)
        try:
            fn = self.rewrite()
            try:
                return fn(*args, **kwargs)
            except Exception as e:
                raise _interp.InterpreterError(repr(e)) from e
        finally:
            scope.restore()

    _interp.InterpretedFunction.__call__ = __call__


def install() -> None:
    """Apply every patch. Requires `TRITON_INTERPRET=1` in the environment."""
    if not triton.knobs.runtime.interpret:
        raise RuntimeError("the interpreter shim needs TRITON_INTERPRET=1 set before triton is imported")
    _install_autotune()
    install_bf16_and_tf32()
    install_kernel_tracking()
    install_libdevice()
    install_device_assert()
    install_bounds_checker()
    _install_namespace_guard()
    _install_def_finder()
    _install_index_conversion()
    _install_device_call_scope()
