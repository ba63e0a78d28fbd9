"""Closes the gaps of Triton's interpreter (`TRITON_INTERPRET=1`) so that it judges numerics like a GPU.

The plain interpreter cannot autotune without a driver, has no libdevice, computes bfloat16 on raw
bit patterns, truncates where the GPU rounds, computes fp32 `tl.dot` exactly where the GPU reads TF32 operands,
ignores `tl.device_assert`, reads or writes any address it is given, and copies its own modules (inspect,
numpy ...) into the module that defines a kernel, and with numpy 2.4 or later cannot use a scalar argument as
a loop bound. Each patch below fixes one of these. They rely on interpreter internals, which is why triton is
pinned.

`install()` must run after `TRITON_INTERPRET=1` is set and before the candidate module is imported.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import textwrap
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import triton
import triton.language as tl
from triton.runtime import autotuner as _autotuner
from triton.runtime import interpreter as _interp
from triton.tools.tensor_descriptor import TensorDescriptor

from adaexplore.executor.worker import _tensor_cores as tensor_cores
from adaexplore.executor.worker._fast_math import FAST_BINARY, FAST_UNARY
from adaexplore.executor.worker._faults import (
    BackendLimitation,
    DeviceAssertFailed,
    EvaluatorFault,
    FakeTensorArgument,
    HostCallOfKernelCode,
    KernelOOBError,
)

__all__ = ["install"]

_Handle = _interp.TensorHandle
_Builder = _interp.InterpreterBuilder


# ---- 1. autotuning without a driver ---------------------------------------------------------------
def _cpu_bench(fn: Callable[[], Any], quantiles: Any = None, **_: Any) -> Any:
    start = time.perf_counter()
    fn()
    ms = (time.perf_counter() - start) * 1e3
    return [ms] * len(quantiles) if quantiles else ms


def _install_autotune() -> None:
    _autotuner.Autotuner.do_bench = property(lambda self: _cpu_bench)  # type: ignore[assignment]


def first_config_only() -> None:
    """From now on an autotuned kernel runs its first config alone (no other is run to time it)."""
    prune = _autotuner.Autotuner.prune_configs

    def first(self: Any, kwargs: Any, *args: Any, **more: Any) -> Any:
        return prune(self, kwargs, *args, **more)[:1]

    _autotuner.Autotuner.prune_configs = first  # type: ignore[method-assign]


# ---- 2. bfloat16 computed in fp32 with round-to-nearest-even ---------------------------------------
def _is_bf16(handle: Any) -> bool:
    return isinstance(handle, _Handle) and handle.dtype.scalar == tl.bfloat16


def _bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)


def _f32_to_bf16(values: np.ndarray, truncate: bool = False) -> np.ndarray:
    f = np.ascontiguousarray(np.asarray(values, dtype=np.float32))
    u = f.view(np.uint32)
    if truncate:
        out = (u >> np.uint32(16)).astype(np.uint16)
    else:
        rounding = ((u >> np.uint32(16)) & np.uint32(1)) + np.uint32(0x7FFF)
        out = ((u + rounding) >> np.uint32(16)).astype(np.uint16)
    return np.where(np.isnan(f), np.uint16(0x7FC0), out).astype(np.uint16)


def _as_f32(handle: _Handle) -> np.ndarray:
    return _bf16_to_f32(handle.data) if _is_bf16(handle) else handle.data


def _bf16_result(values: np.ndarray) -> _Handle:
    if values.dtype == np.bool_:
        return _Handle(values, tl.int1)
    return _Handle(_f32_to_bf16(values), tl.bfloat16)


# How the tensor cores take fp32 operands and accumulate their products, as recorded on an H200: see
# _tensor_cores (tf32 operands truncated, products added 8 at a time after aligning them to the largest
# exponent, which cuts a small term's low bits where the accumulator is large).
_tf32, _tf32_nearest = tensor_cores.tf32, tensor_cores.tf32_nearest


def _precision_name(precision: Any) -> str:
    return str(precision).rsplit(".", 1)[-1].upper()


def _install_bf16_and_tf32() -> None:
    binary, unary, ternary = _Builder.binary_op, _Builder.unary_op, _Builder.ternary_op
    dot, fma, cast, fp_to_fp = _Builder.create_dot, _Builder.create_fma, _Builder.cast_impl, _Builder.create_fp_to_fp
    erf, rsqrt = _Builder.create_erf, _Builder.create_rsqrt

    def binary_op(self: _Builder, lhs: _Handle, rhs: _Handle, op: Callable[..., Any]) -> _Handle:
        if not (_is_bf16(lhs) or _is_bf16(rhs)):
            return binary(self, lhs, rhs, op)
        return _bf16_result(np.asarray(op(_as_f32(lhs), _as_f32(rhs))))

    def unary_op(self: _Builder, arg: _Handle, op: Callable[..., Any]) -> _Handle:
        if not _is_bf16(arg):
            return unary(self, arg, op)
        return _bf16_result(np.asarray(op(_as_f32(arg))))

    def ternary_op(self: _Builder, a: _Handle, b: _Handle, c: _Handle, op: Callable[..., Any]) -> _Handle:
        if op is np.where or not any(_is_bf16(h) for h in (a, b, c)):
            return ternary(self, a, b, c, op)  # selecting bit patterns is exact
        return _bf16_result(np.asarray(op(_as_f32(a), _as_f32(b), _as_f32(c))))

    def create_dot(self: _Builder, a: _Handle, b: _Handle, d: _Handle, precision: Any, max_imprecise: Any) -> _Handle:
        if _is_bf16(a) or _is_bf16(b):
            a, b = _Handle(_as_f32(a), tl.float32), _Handle(_as_f32(b), tl.float32)
        elif a.data.dtype == np.float32 and _precision_name(precision) == "TF32" and d.data.dtype == np.float32:
            return _Handle(tensor_cores.mma(_tf32(a.data), _tf32(b.data), d.data), d.dtype.scalar)
        elif a.data.dtype == np.float32 and _precision_name(precision) == "TF32X3" and d.data.dtype == np.float32:
            return _tf32x3_dot(a, b, d)
        if _is_bf16(d):
            out = dot(self, a, b, _Handle(_as_f32(d), tl.float32), precision, max_imprecise)
            return _bf16_result(out.data)
        return dot(self, a, b, d, precision, max_imprecise)

    def _tf32x3_dot(a: _Handle, b: _Handle, d: _Handle) -> _Handle:
        # as Triton builds it: the two small products into a fresh accumulator (a NaN there dropped), the large
        # one on top of them, then the result added to the running accumulator in fp32
        a_hi, b_hi = _tf32_nearest(a.data), _tf32_nearest(b.data)
        a_lo, b_lo = _tf32(a.data - a_hi), _tf32(b.data - b_hi)
        small = tensor_cores.mma(a_lo, _tf32(b_hi), np.zeros_like(d.data, dtype=np.float32))
        small = tensor_cores.mma(_tf32(a_hi), b_lo, small)
        small = np.where(np.isnan(small), np.float32(0), small)
        big = tensor_cores.mma(_tf32(a_hi), _tf32(b_hi), small)
        return _Handle((d.data + big).astype(np.float32), d.dtype.scalar)

    def create_fma(self: _Builder, x: _Handle, y: _Handle, z: _Handle) -> _Handle:
        if not any(_is_bf16(h) for h in (x, y, z)):
            return fma(self, x, y, z)
        return _bf16_result(_as_f32(x) * _as_f32(y) + _as_f32(z))

    def cast_impl(self: _Builder, src: _Handle, dst_type: Any) -> _Handle:
        s, d = src.dtype.scalar, dst_type.scalar
        if tl.bfloat16 not in (s, d):
            return cast(self, src, dst_type)
        f = _as_f32(src) if s == tl.bfloat16 else np.asarray(src.data).astype(np.float32)
        if d == tl.bfloat16:
            return _Handle(_f32_to_bf16(f), tl.bfloat16)
        return _Handle(f.astype(_interp._get_np_dtype(dst_type)), d)

    def create_fp_to_fp(self: _Builder, src: _Handle, dst_type: Any, rounding_mode: Any) -> _Handle:
        if dst_type.scalar == tl.bfloat16 and src.dtype.scalar in (tl.float32, tl.float16, tl.float64):
            truncate = str(rounding_mode).upper().endswith("RTZ")
            return _Handle(_f32_to_bf16(np.asarray(src.data).astype(np.float32), truncate), tl.bfloat16)
        return fp_to_fp(self, src, dst_type, rounding_mode)

    def create_erf(self: _Builder, arg: _Handle) -> _Handle:
        return _bf16_result(erf(self, _Handle(_as_f32(arg), tl.float32)).data) if _is_bf16(arg) else erf(self, arg)

    def create_rsqrt(self: _Builder, arg: _Handle) -> _Handle:
        if _is_bf16(arg):
            return _bf16_result(rsqrt(self, _Handle(_as_f32(arg), tl.float32)).data)
        return rsqrt(self, arg)

    _Builder.binary_op = binary_op  # type: ignore[method-assign]
    _Builder.unary_op = unary_op  # type: ignore[method-assign]
    _Builder.ternary_op = ternary_op  # type: ignore[method-assign]
    _Builder.create_dot = create_dot  # type: ignore[method-assign]
    _Builder.create_fma = create_fma  # type: ignore[method-assign]
    _Builder.cast_impl = cast_impl  # type: ignore[method-assign]
    _Builder.create_fp_to_fp = create_fp_to_fp  # type: ignore[method-assign]
    _Builder.create_erf = create_erf  # type: ignore[method-assign]
    _Builder.create_rsqrt = create_rsqrt  # type: ignore[method-assign]
    for name in (
        "create_si_to_fp",
        "create_ui_to_fp",
        "create_fp_to_si",
        "create_fp_to_ui",
        "create_fp_ext",
        "create_fp_trunc",
    ):
        setattr(_Builder, name, lambda self, src, dst_type: self.cast_impl(src, dst_type))
    _Builder.get_bf16 = lambda self, v: _Handle(_f32_to_bf16(np.array([v], np.float32)), tl.bfloat16)

    # Reductions and scans see raw bf16 bits; run them in fp32 and round the result back.
    for ops in (_interp.ReduceOps, _interp.ScanOps):
        ops.apply_impl = _in_fp32(ops.apply_impl)  # type: ignore[method-assign]


def _in_fp32(apply_impl: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(self: Any, inputs: Any) -> Any:
        if not any(isinstance(t, tl.tensor) and t.dtype == tl.bfloat16 for t in inputs):
            return apply_impl(self, inputs)
        up = tuple(_retype(t, _as_f32(t.handle), tl.float32) if t.dtype == tl.bfloat16 else t for t in inputs)
        result = apply_impl(self, up)
        items = result if isinstance(result, list | tuple) else [result]
        down = [_retype(r, _f32_to_bf16(r.handle.data), tl.bfloat16) if r.dtype == tl.float32 else r for r in items]
        return type(result)(down) if isinstance(result, list | tuple) else down[0]

    return wrapped


def _retype(t: tl.tensor, data: np.ndarray, dtype: Any) -> tl.tensor:
    ty = tl.block_type(dtype, list(t.shape)) if t.type.is_block() else dtype
    return tl.tensor(_Handle(np.asarray(data), dtype), ty)


# ---- 3. libdevice on numpy/torch -------------------------------------------------------------------
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
    # the GPU's approximations, not exact values (see worker/_fast_math.py)
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
        return _as_f32(x.handle).astype(np.float64), x.dtype, x.type
    return np.asarray(x, dtype=np.float64), None, None


# Kernels the interpreter is running now: libdevice exists only inside one.
_kernels_running = 0


def _install_kernel_tracking() -> None:
    original = _interp.GridExecutor.__call__

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        global _kernels_running
        _kernels_running += 1
        try:
            return original(self, *args, **kwargs)
        finally:
            _kernels_running -= 1

    _interp.GridExecutor.__call__ = call  # type: ignore[method-assign]


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
            data, scalar = _f32_to_bf16(out), tl.bfloat16
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
    call.__triton_builtin__ = True  # type: ignore[attr-defined]
    return call


def _unavailable(name: str) -> Callable[[tuple[Any, ...]], Any]:
    def compute(_: tuple[Any, ...]) -> Any:
        raise BackendLimitation(f"libdevice.{name} is not available in the interpret backend; it runs on a GPU")

    return compute


def _install_libdevice() -> None:
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


# ---- 4. device_assert on ---------------------------------------------------------------------------
def _install_device_assert() -> None:
    builder = _interp.interpreter_builder
    # debug turns on tl.device_assert; overflow sanitizing stays off, as on the GPU by default.
    builder.options = dataclasses.replace(builder.options, debug=True, sanitize_overflow=False)

    def create_assert(self: _Builder, condition: Any, message: str) -> None:
        values = np.asarray(condition.data if isinstance(condition, _Handle) else condition)
        if not values.all():
            failing = int(values.size - np.count_nonzero(values))
            raise DeviceAssertFailed(f"device_assert failed in program {self.grid_idx} ({failing} lanes): {message}")

    _Builder.create_assert = create_assert  # type: ignore[method-assign]


# ---- 5. bounds checking ------------------------------------------------------------------------------
@dataclasses.dataclass
class _Range:
    start: int
    end: int
    label: str


class _Launch:
    kernel = "?"
    ranges: list[_Range] = []  # noqa: RUF012 -- replaced per launch


def _collect_ranges(value: Any, label: str, out: list[_Range]) -> None:
    if isinstance(value, torch.Tensor):
        storage = torch.Tensor.untyped_storage(value)  # through the class: an own attribute cannot shadow it
        dtype = str(value.dtype).removeprefix("torch.")
        out.append(
            _Range(storage.data_ptr(), storage.data_ptr() + storage.nbytes(), f"{label} {tuple(value.shape)} {dtype}")
        )
    elif isinstance(value, tuple | list):
        for item in value:
            _collect_ranges(item, label, out)
    elif hasattr(value, "base") and isinstance(getattr(value, "base", None), torch.Tensor):
        _collect_ranges(value.base, label, out)


def _refuse_fake_tensors(value: Any, label: str) -> None:
    """The interpreter takes anything with a data_ptr for a tensor, calls its methods and reads wherever it
    points: such an argument must be a tensor (or hold one, as a tensor descriptor does)."""
    if isinstance(value, torch.Tensor):
        return
    if isinstance(value, tuple | list):
        for item in value:
            _refuse_fake_tensors(item, label)
    elif isinstance(value, TensorDescriptor):  # a host-side descriptor: its base is what the kernel reads
        _refuse_fake_tensors(value.base, f"{label}.base")
    elif hasattr(value, "data_ptr") and not isinstance(getattr(value, "base", None), torch.Tensor):
        raise FakeTensorArgument(
            f"kernel argument {label} is a {type(value).__name__} with a data_ptr, not a torch.Tensor; pass tensors"
        )


def _check_access(builder: _Builder, ptrs: _Handle, mask: _Handle | None, what: str) -> None:
    ranges = _Launch.ranges
    if not ranges:
        # no tensor argument: every address the kernel could touch came from somewhere else
        raise KernelOOBError(
            f"{what} in kernel {_Launch.kernel}, which was given no tensor: a kernel may touch only the memory "
            "of the tensors it is passed."
        )
    addresses = np.asarray(ptrs.data).astype(np.uint64)
    active = (
        np.ones(addresses.shape, bool)
        if mask is None
        else np.broadcast_to(np.asarray(mask.data, bool), addresses.shape)
    )
    size = np.uint64(max(1, ptrs.get_element_ty().primitive_bitwidth // 8))
    inside = np.zeros(addresses.shape, bool)
    for r in ranges:
        inside |= (addresses >= np.uint64(r.start)) & (addresses + size <= np.uint64(r.end))
    bad = active & ~inside
    if not bad.any():
        return
    first = int(addresses[bad].flat[0])
    nearest = min(ranges, key=lambda r: min(abs(first - r.start), abs(first - r.end)))
    raise KernelOOBError(
        f"out-of-bounds {what} in kernel {_Launch.kernel}, program {builder.grid_idx}: {int(bad.sum())} active "
        f"lanes point outside every tensor argument; the first is at byte offset {first - nearest.start} of "
        f"{nearest.label}, whose storage is {nearest.end - nearest.start} bytes. Mask the access "
        "(mask=offsets < n) or fix the offset arithmetic."
    )


def _install_bounds_checker() -> None:
    init_args = _interp.GridExecutor._init_args_hst

    def _init_args_hst(self: Any, args_dev: Any, kwargs: Any) -> Any:
        for index, value in enumerate(args_dev):
            _refuse_fake_tensors(value, self.arg_names[index] if index < len(self.arg_names) else f"argument {index}")
        for name, value in kwargs.items():
            _refuse_fake_tensors(value, name)
        args_hst, kwargs_hst = init_args(self, args_dev, kwargs)
        ranges: list[_Range] = []
        for index, value in enumerate(args_hst):
            name = self.arg_names[index] if index < len(self.arg_names) else f"argument {index}"
            _collect_ranges(value, name, ranges)
        for name, value in kwargs_hst.items():
            _collect_ranges(value, name, ranges)
        _Launch.ranges = ranges
        _Launch.kernel = getattr(self.fn, "__name__", "?")
        return args_hst, kwargs_hst

    _interp.GridExecutor._init_args_hst = _init_args_hst  # type: ignore[method-assign]
    load, store = _Builder.create_masked_load, _Builder.create_masked_store
    rmw, cas = _Builder.create_atomic_rmw, _Builder.create_atomic_cas

    # The interpreter passes the cache and eviction hints by keyword where a tensor descriptor loads or stores.
    def create_masked_load(self: _Builder, ptrs: _Handle, mask: Any, other: Any, *rest: Any, **hints: Any) -> _Handle:
        _check_access(self, ptrs, mask, "load")
        return load(self, ptrs, mask, other, *rest, **hints)

    def create_masked_store(self: _Builder, ptrs: _Handle, value: Any, mask: Any, *rest: Any, **hints: Any) -> Any:
        _check_access(self, ptrs, mask, "store")
        return store(self, ptrs, value, mask, *rest, **hints)

    def create_atomic_rmw(
        self: _Builder, op: Any, ptr: _Handle, val: Any, mask: Any, *rest: Any, **hints: Any
    ) -> _Handle:
        _check_access(self, ptr, mask, "atomic")
        return rmw(self, op, ptr, val, mask, *rest, **hints)

    def create_atomic_cas(self: _Builder, ptr: _Handle, cmp: Any, val: Any, *rest: Any, **hints: Any) -> _Handle:
        _check_access(self, ptr, None, "atomic_cas")
        return cas(self, ptr, cmp, val, *rest, **hints)

    _Builder.create_masked_load = create_masked_load  # type: ignore[method-assign]
    _Builder.create_masked_store = create_masked_store  # type: ignore[method-assign]
    _Builder.create_atomic_rmw = create_atomic_rmw  # type: ignore[method-assign]
    _Builder.create_atomic_cas = create_atomic_cas  # type: ignore[method-assign]


# ---- 6. the rewritten kernel gets the one name it needs, not the interpreter's namespace -----------------
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

    _interp.FunctionRewriter._compile_and_exec = _compile_and_exec  # type: ignore[method-assign]


def _install_def_finder() -> None:
    """The interpreter cuts a kernel's source at the last line that starts with `def`, which may be a line in
    a string of its body or a nested function: it would run code other than the kernel. Cut it at the
    kernel's own def line."""

    def _find_def(self: Any, lines: list[str]) -> int:
        tree = ast.parse(textwrap.dedent("".join(lines)))
        return tree.body[0].lineno

    _interp.FunctionRewriter._find_def = _find_def  # type: ignore[method-assign]


# ---- 7. scalars as integers with any numpy ---------------------------------------------------------
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


# ---- 8. a device function's patches undone when it returns ----------------------------------------------
# The interpreter patches Triton's language (tl.program_id, tl.core.reduce ...) for every call of a device
# function and never restores it, so after a kernel that calls one, code outside the interpreter (the compile
# for the GPU of each launch, see _launches) met the interpreter's versions. The call restores them.


def _install_device_call_scope() -> None:
    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not _kernels_running:
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

    _interp.InterpretedFunction.__call__ = __call__  # type: ignore[method-assign]


def install() -> None:
    """Apply every patch. Requires `TRITON_INTERPRET=1` in the environment."""
    if not triton.knobs.runtime.interpret:
        raise RuntimeError("the interpreter shim needs TRITON_INTERPRET=1 set before triton is imported")
    _install_autotune()
    _install_bf16_and_tf32()
    _install_kernel_tracking()
    _install_libdevice()
    _install_device_assert()
    _install_bounds_checker()
    _install_namespace_guard()
    _install_def_finder()
    _install_index_conversion()
    _install_device_call_scope()
