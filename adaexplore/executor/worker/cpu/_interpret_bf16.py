"""The interpreter's arithmetic as a GPU's: bfloat16 computed in fp32 with round-to-nearest-even (the plain
interpreter computes on raw bit patterns and truncates where the GPU rounds), fp32 `tl.dot` with TF32
operands as the tensor cores take them, and every tensor-core dot into an fp32 accumulator (tf32, bf16, fp16
operands) summed as the tensor cores sum it (the plain interpreter computes all of it exactly). Installed by
`_interpret_shim.install`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import triton.language as tl
from triton.runtime import interpreter as _interp

from adaexplore.executor.worker.cpu import _tensor_cores as tensor_cores

__all__ = ["as_f32", "f32_to_bf16", "install_bf16_and_tf32"]

if TYPE_CHECKING:  # Triton ships no types: to mypy these are classes whose every member is Any

    class _Handle(Any): ...

    class _Builder(Any): ...

else:
    _Handle = _interp.TensorHandle
    _Builder = _interp.InterpreterBuilder


def _is_bf16(handle: Any) -> bool:
    return isinstance(handle, _Handle) and handle.dtype.scalar == tl.bfloat16


def _is_half(handle: Any) -> bool:
    return isinstance(handle, _Handle) and handle.dtype.scalar in (tl.bfloat16, tl.float16)


def _half_as_f32(handle: _Handle) -> np.ndarray:
    return as_f32(handle) if _is_bf16(handle) else np.asarray(handle.data).astype(np.float32)


def _bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)


def f32_to_bf16(values: np.ndarray, truncate: bool = False) -> np.ndarray:
    f = np.ascontiguousarray(np.asarray(values, dtype=np.float32))
    u = f.view(np.uint32)
    if truncate:
        out = (u >> np.uint32(16)).astype(np.uint16)
    else:
        rounding = ((u >> np.uint32(16)) & np.uint32(1)) + np.uint32(0x7FFF)
        out = ((u + rounding) >> np.uint32(16)).astype(np.uint16)
    return np.where(np.isnan(f), np.uint16(0x7FC0), out).astype(np.uint16)


def as_f32(handle: _Handle) -> np.ndarray:
    return _bf16_to_f32(handle.data) if _is_bf16(handle) else handle.data


def _bf16_result(values: np.ndarray) -> _Handle:
    if values.dtype == np.bool_:
        return _Handle(values, tl.int1)
    return _Handle(f32_to_bf16(values), tl.bfloat16)


# How the tensor cores take fp32 operands and accumulate their products, as recorded on an H200: see
# _tensor_cores (tf32 operands truncated, products added 8 at a time after aligning them to the largest
# exponent, which cuts a small term's low bits where the accumulator is large).
_tf32, _tf32_nearest = tensor_cores.tf32, tensor_cores.tf32_nearest


def _precision_name(precision: Any) -> str:
    return str(precision).rsplit(".", 1)[-1].upper()


def install_bf16_and_tf32() -> None:
    binary, unary, ternary = _Builder.binary_op, _Builder.unary_op, _Builder.ternary_op
    dot, fma, cast, fp_to_fp = _Builder.create_dot, _Builder.create_fma, _Builder.cast_impl, _Builder.create_fp_to_fp
    erf, rsqrt = _Builder.create_erf, _Builder.create_rsqrt

    def binary_op(self: _Builder, lhs: _Handle, rhs: _Handle, op: Callable[..., Any]) -> _Handle:
        if not (_is_bf16(lhs) or _is_bf16(rhs)):
            return binary(self, lhs, rhs, op)
        return _bf16_result(np.asarray(op(as_f32(lhs), as_f32(rhs))))

    def unary_op(self: _Builder, arg: _Handle, op: Callable[..., Any]) -> _Handle:
        if not _is_bf16(arg):
            return unary(self, arg, op)
        return _bf16_result(np.asarray(op(as_f32(arg))))

    def ternary_op(self: _Builder, a: _Handle, b: _Handle, c: _Handle, op: Callable[..., Any]) -> _Handle:
        if op is np.where or not any(_is_bf16(h) for h in (a, b, c)):
            return ternary(self, a, b, c, op)  # selecting bit patterns is exact
        return _bf16_result(np.asarray(op(as_f32(a), as_f32(b), as_f32(c))))

    def create_dot(self: _Builder, a: _Handle, b: _Handle, d: _Handle, precision: Any, max_imprecise: Any) -> _Handle:
        if _is_half(a) and _is_half(b) and d.data.dtype == np.float32:
            # bf16 and fp16 products are exact in fp32; the tensor cores add them up as they do tf32 products
            return _Handle(tensor_cores.mma(_half_as_f32(a), _half_as_f32(b), d.data), d.dtype.scalar)
        if _is_bf16(a) or _is_bf16(b):
            a, b = _Handle(as_f32(a), tl.float32), _Handle(as_f32(b), tl.float32)
        elif a.data.dtype == np.float32 and _precision_name(precision) == "TF32" and d.data.dtype == np.float32:
            return _Handle(tensor_cores.mma(_tf32(a.data), _tf32(b.data), d.data), d.dtype.scalar)
        elif a.data.dtype == np.float32 and _precision_name(precision) == "TF32X3" and d.data.dtype == np.float32:
            return _tf32x3_dot(a, b, d)
        if _is_bf16(d):
            out = dot(self, a, b, _Handle(as_f32(d), tl.float32), precision, max_imprecise)
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
        return _bf16_result(as_f32(x) * as_f32(y) + as_f32(z))

    def cast_impl(self: _Builder, src: _Handle, dst_type: Any) -> _Handle:
        s, d = src.dtype.scalar, dst_type.scalar
        if tl.bfloat16 not in (s, d):
            return cast(self, src, dst_type)
        f = as_f32(src) if s == tl.bfloat16 else np.asarray(src.data).astype(np.float32)
        if d == tl.bfloat16:
            return _Handle(f32_to_bf16(f), tl.bfloat16)
        return _Handle(f.astype(_interp._get_np_dtype(dst_type)), d)

    def create_fp_to_fp(self: _Builder, src: _Handle, dst_type: Any, rounding_mode: Any) -> _Handle:
        if dst_type.scalar == tl.bfloat16 and src.dtype.scalar in (tl.float32, tl.float16, tl.float64):
            truncate = str(rounding_mode).upper().endswith("RTZ")
            return _Handle(f32_to_bf16(np.asarray(src.data).astype(np.float32), truncate), tl.bfloat16)
        return fp_to_fp(self, src, dst_type, rounding_mode)

    def create_erf(self: _Builder, arg: _Handle) -> _Handle:
        return _bf16_result(erf(self, _Handle(as_f32(arg), tl.float32)).data) if _is_bf16(arg) else erf(self, arg)

    def create_rsqrt(self: _Builder, arg: _Handle) -> _Handle:
        if _is_bf16(arg):
            return _bf16_result(rsqrt(self, _Handle(as_f32(arg), tl.float32)).data)
        return rsqrt(self, arg)

    _Builder.binary_op = binary_op
    _Builder.unary_op = unary_op
    _Builder.ternary_op = ternary_op
    _Builder.create_dot = create_dot
    _Builder.create_fma = create_fma
    _Builder.cast_impl = cast_impl
    _Builder.create_fp_to_fp = create_fp_to_fp
    _Builder.create_erf = create_erf
    _Builder.create_rsqrt = create_rsqrt
    for name in (
        "create_si_to_fp",
        "create_ui_to_fp",
        "create_fp_to_si",
        "create_fp_to_ui",
        "create_fp_ext",
        "create_fp_trunc",
    ):
        setattr(_Builder, name, lambda self, src, dst_type: self.cast_impl(src, dst_type))
    _Builder.get_bf16 = lambda self, v: _Handle(f32_to_bf16(np.array([v], np.float32)), tl.bfloat16)

    # Reductions and scans see raw bf16 bits; run them in fp32 and round the result back.
    for ops in (_interp.ReduceOps, _interp.ScanOps):
        ops.apply_impl = _in_fp32(ops.apply_impl)


def _in_fp32(apply_impl: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(self: Any, inputs: Any) -> Any:
        if not any(isinstance(t, tl.tensor) and t.dtype == tl.bfloat16 for t in inputs):
            return apply_impl(self, inputs)
        up = tuple(_retype(t, as_f32(t.handle), tl.float32) if t.dtype == tl.bfloat16 else t for t in inputs)
        result = apply_impl(self, up)
        items = result if isinstance(result, list | tuple) else [result]
        down = [_retype(r, f32_to_bf16(r.handle.data), tl.bfloat16) if r.dtype == tl.float32 else r for r in items]
        return type(result)(down) if isinstance(result, list | tuple) else down[0]

    return wrapped


def _retype(t: tl.tensor, data: np.ndarray, dtype: Any) -> tl.tensor:
    ty = tl.block_type(dtype, list(t.shape)) if t.type.is_block() else dtype
    return tl.tensor(_Handle(np.asarray(data), dtype), ty)
