"""libdevice for the interpreter, which has none: each function computed with numpy or torch inside a kernel the
interpreter runs (the GPU's approximations where libdevice computes approximately, see `_fast_math`), compiled to
the CUDA builtin where the sm_90 compile beside the interpreter reads it, and failing from host code as Triton's
own does. Also the count of the kernels the interpreter is running now, which tells a call inside a kernel from
one in host code. Installed by `_interpret_shim.install`."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import triton.language as tl
from triton.runtime import interpreter as _interp

from adaexplore.executor.worker.confine._faults import BackendLimitation, EvaluatorFault
from adaexplore.executor.worker.cpu._fast_math import FAST_BINARY, FAST_UNARY
from adaexplore.executor.worker.cpu._interpret_bf16 import as_f32, f32_to_bf16

__all__ = ["in_kernel", "install_kernel_tracking", "install_libdevice"]

_Handle = _interp.TensorHandle


def _t(fn: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[np.ndarray], np.ndarray]:
    return lambda x: fn(torch.from_numpy(np.ascontiguousarray(x, dtype=np.float64))).numpy()


_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "tanh": np.tanh,
    "exp": np.exp,
    "exp2": np.exp2,
    "exp10": lambda x: np.power(10.0, x),
    "expm1": np.expm1,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "cbrt": np.cbrt,
    "rcbrt": lambda x: 1.0 / np.cbrt(x),
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "sinpi": lambda x: np.sin(np.pi * x),
    "cospi": lambda x: np.cos(np.pi * x),
    "erf": _t(torch.special.erf),
    "erfc": _t(torch.special.erfc),
    "erfinv": _t(torch.special.erfinv),
    "erfcx": _t(torch.special.erfcx),
    "lgamma": _t(torch.lgamma),
    "tgamma": _t(lambda t: torch.lgamma(t).exp()),
    "normcdf": _t(torch.special.ndtr),
    "normcdfinv": _t(torch.special.ndtri),
    "cyl_bessel_i0": _t(torch.special.i0),
    "cyl_bessel_i1": _t(torch.special.i1),
    "j0": _t(torch.special.bessel_j0),
    "j1": _t(torch.special.bessel_j1),
    "y0": _t(torch.special.bessel_y0),
    "y1": _t(torch.special.bessel_y1),
    "abs": np.abs,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "rint": np.rint,
    "nearbyint": np.rint,
    "round": lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5),
    "saturatef": lambda x: np.clip(x, 0.0, 1.0),
    "sqrt_rn": np.sqrt,
    "rsqrt_rn": lambda x: 1.0 / np.sqrt(x),
    "rcp_rn": lambda x: 1.0 / x,
    "logb": lambda x: np.floor(np.log2(np.abs(x))),
    # the GPU's approximations, not exact values (see worker/cpu/_fast_math.py)
    **FAST_UNARY,
}
_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "pow": np.power,
    "atan2": np.arctan2,
    "fmod": np.fmod,
    "remainder": np.remainder,
    "hypot": np.hypot,
    "copysign": np.copysign,
    "fmin": np.fmin,
    "fmax": np.fmax,
    "fdim": lambda a, b: np.maximum(a - b, 0),
    "div_rn": np.divide,
    "add_rn": np.add,
    "sub_rn": np.subtract,
    "mul_rn": np.multiply,
    "nextafter": np.nextafter,
    "rhypot": lambda a, b: 1.0 / np.hypot(a, b),
    **FAST_BINARY,
}
_TERNARY: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]] = {
    "fma": lambda a, b, c: a * b + c,
    "fma_rn": lambda a, b, c: a * b + c,
}
_PREDICATES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "isnan": np.isnan,
    "isinf": np.isinf,
    "signbit": np.signbit,
    "isfinited": np.isfinite,
    "finitef": np.isfinite,
}


def _operand(x: Any) -> tuple[np.ndarray, Any, Any]:
    if isinstance(x, tl.constexpr):
        x = x.value
    if isinstance(x, tl.tensor):
        return as_f32(x.handle).astype(np.float64), x.dtype, x.type
    return np.asarray(x, dtype=np.float64), None, None


# Kernels the interpreter is running now: libdevice exists only inside one.
_kernels_running = 0


def in_kernel() -> bool:
    """Whether the interpreter is running a kernel now."""
    return _kernels_running > 0


def install_kernel_tracking() -> None:
    original = _interp.GridExecutor.__call__

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        global _kernels_running
        _kernels_running += 1
        try:
            return original(self, *args, **kwargs)
        finally:
            _kernels_running -= 1

    _interp.GridExecutor.__call__ = call


def _outside_kernel(name: str) -> ValueError:
    # What Triton's own libdevice functions raise when called from host code, on any backend.
    return ValueError(
        f"libdevice.{name} was called outside a Triton kernel. Did you forget to add @triton.jit ? "
        "(`_semantic` argument must be provided outside of JIT functions.)"
    )


def _libdevice_compute(name: str, fn: Callable[..., np.ndarray], predicate: bool, args: tuple[Any, ...]) -> tl.tensor:
    try:
        operands = [_operand(a) for a in args]
        dtype = next((d for _, d, _ in operands if d is not None), tl.float32)
        with np.errstate(all="ignore"):
            out = np.asarray(fn(*(o for o, _, _ in operands)))
        shape = list(out.shape)
        if predicate:
            data, scalar = out.astype(bool), tl.int1
        elif dtype == tl.bfloat16:
            data, scalar = f32_to_bf16(out), tl.bfloat16
        else:
            data, scalar = out.astype(_interp._get_np_dtype(dtype)), dtype
        if not shape:
            data = data.reshape(1)
        ty = tl.block_type(scalar, shape) if shape else scalar
        return tl.tensor(_Handle(data, scalar), ty)
    except Exception as exc:
        # the kernel compiled for the GPU with this call (the interpreter compiles each launch first)
        raise EvaluatorFault(f"the interpreter's stand-in for libdevice.{name} failed: {type(exc).__name__}") from exc


def _stand_in(
    original: Callable[..., Any], compute: Callable[[tuple[Any, ...]], Any], compiled: Callable[..., Any] | None
) -> Callable[..., Any]:
    """libdevice's `original` as the interpreter sees it: computed by `compute` inside a kernel the interpreter
    runs. Outside one, with a compiler's `_semantic` (the sm_90 compile beside the interpreter), it is
    `compiled`, the CUDA function; from host code it fails as the original does."""

    def call(*args: Any, _semantic: Any = None, **kwargs: Any) -> Any:
        if _kernels_running:
            return compute(args)
        if _semantic is not None and compiled is not None:
            return compiled(*args, _semantic=_semantic, **kwargs)
        raise _outside_kernel(original.__name__)

    # It is libdevice's function, to the policy and to Triton's compiler.
    call.__name__ = original.__name__
    call.__qualname__ = original.__qualname__
    call.__module__ = original.__module__
    call.__doc__ = original.__doc__
    call.__triton_builtin__ = True  # type: ignore[attr-defined]  # Triton's mark of a builtin
    return call


def _unavailable(name: str) -> Callable[[tuple[Any, ...]], Any]:
    def compute(_: tuple[Any, ...]) -> Any:
        raise BackendLimitation(f"libdevice.{name} is not available in the interpret backend; it runs on a GPU")

    return compute


def install_libdevice() -> None:
    import triton.language.extra.cuda.libdevice as cuda_libdevice
    import triton.language.extra.libdevice as libdevice

    table: dict[str, Callable[[tuple[Any, ...]], Any]] = {}
    for group, predicate in ((_UNARY, False), (_BINARY, False), (_TERNARY, False), (_PREDICATES, True)):
        for name, fn in group.items():
            table[name] = functools.partial(_libdevice_compute, name, fn, predicate)
    # libdevice's functions are stubs that Triton's compiler replaces with the CUDA module's builtins of the
    # same name; both are stood in for, and the stand-ins compile to those builtins.
    cuda = {
        name: value
        for name, value in vars(cuda_libdevice).items()
        if not name.startswith("_") and callable(value) and getattr(value, "__triton_builtin__", False)
    }
    stubs = {
        name: value
        for name, value in vars(libdevice).items()
        if not name.startswith("_") and callable(value) and not isinstance(value, type)
    }
    for module, functions in ((cuda_libdevice, cuda), (libdevice, stubs)):
        for name, original in functions.items():
            compute = table.get(name) or _unavailable(name)
            setattr(module, name, _stand_in(original, compute, cuda.get(name)))
