"""libdevice's `fast_*` functions as an NVIDIA GPU computes them, for the interpret backend.

On the GPU each is one of the SFU's approximate instructions (`ex2.approx`, `lg2.approx`, `sin.approx`,
`cos.approx`, `tanh.approx`, `div.approx`) behind float32 arithmetic of libdevice's own: `fast_expf(x)` is
`ex2.approx(x * log2(e))`, `fast_tanf(x)` is `sin.approx(x) / cos.approx(x)`, and so on. Computed exactly on
the CPU, a kernel that leans on them passes where the GPU fails it (tangents near their poles, hyperbolic
tangents held to float32's tolerance). Here the float32 arithmetic around each instruction is done as the GPU
does it (the rounding of `x * log2(e)`, which is most of `fast_expf`'s error for large `x`; the reduction of a
sine's argument to turns), and each instruction is exact but for an error of its own, drawn from the value of
its operand (the same operand always errs the same way, as on the hardware) within the bound the CUDA
Programming Guide and the PTX ISA give for it. The hardware's own errors are not public bit for bit: this is a
model of them, of the documented size, not a copy.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["FAST_BINARY", "FAST_UNARY", "USED"]

# the fast_* functions a kernel of this worker called
USED: set[str] = set()

# documented bounds (the CUDA C++ Programming Guide's table of intrinsic functions; the PTX ISA for tanh.approx)
_EX2_RELATIVE = 2.0**-22  # 2 ulp
_LG2_ABSOLUTE = 2.0**-22  # for operands in [0.5, 2]; 2 ulp elsewhere
# for operands in [-pi, pi] (the argument's reduction adds more outside), of which the reduction to turns in float32
# (modelled apart) takes up to 2.2e-7
_REDUCTION = 2.2e-7
_SIN_ABSOLUTE = 2.0**-21.41 - _REDUCTION
_COS_ABSOLUTE = 2.0**-21.19 - _REDUCTION
_TANH_RELATIVE = 2.0**-10.987
_DIV_RELATIVE = 2.0**-22  # 2 ulp, for divisors of magnitude in [2^-126, 2^126]
_LOG2E = np.float32(np.log2(np.e))
_LOG2_10 = np.float32(np.log2(10.0))
_LN2 = np.float32(np.log(2.0))
_LOG10_2 = np.float32(np.log10(2.0))
_INV_2PI = np.float32(1.0 / (2.0 * np.pi))


def _f32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).astype(np.float32)


def _wobble(operand: np.ndarray, salt: int) -> np.ndarray:
    """A value in [-1, 1] per element, fixed by the float32 bits of `operand` (and the instruction's `salt`)."""
    bits = _f32(operand).view(np.uint32).astype(np.uint64)
    h = (bits * np.uint64(0x9E3779B1) + np.uint64(salt)) & np.uint64(0xFFFFFFFF)
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x85EBCA6B)) & np.uint64(0xFFFFFFFF)
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0xC2B2AE35)) & np.uint64(0xFFFFFFFF)
    h ^= h >> np.uint64(16)
    return h.astype(np.float64) / 2.0**31 - 1.0


def _ex2(t: np.ndarray) -> np.ndarray:
    t = _f32(t)
    return np.exp2(t.astype(np.float64)) * (1.0 + _EX2_RELATIVE * _wobble(t, 1))


def _lg2(x: np.ndarray) -> np.ndarray:
    x = _f32(x)
    exact = np.log2(x.astype(np.float64))
    near_one = (x >= 0.5) & (x <= 2.0)
    return np.where(near_one, exact + _LG2_ABSOLUTE * _wobble(x, 2), exact * (1.0 + _LG2_ABSOLUTE * _wobble(x, 3)))


def _turns(x: np.ndarray) -> np.ndarray:
    """The argument of a sine or cosine as the GPU hands it to the SFU: in turns, rounded to float32."""
    return _f32(_f32(x) * _INV_2PI).astype(np.float64)


def _sin(x: np.ndarray) -> np.ndarray:
    return np.sin(2.0 * np.pi * _turns(x)) + _SIN_ABSOLUTE * _wobble(x, 4)


def _cos(x: np.ndarray) -> np.ndarray:
    return np.cos(2.0 * np.pi * _turns(x)) + _COS_ABSOLUTE * _wobble(x, 5)


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = _f32(a).astype(np.float64), _f32(b).astype(np.float64)
    quotient = a / b * (1.0 + _DIV_RELATIVE * _wobble(_f32(a / b), 6))
    # past 2^126 the approximate reciprocal flushes to zero, and so does the quotient
    return np.where(np.abs(b) > 2.0**126, 0.0 * a, quotient)


def _noted(name: str, fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    def compute(*args: np.ndarray) -> np.ndarray:
        USED.add(name)
        return fn(*args)

    return compute


FAST_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "fast_expf": lambda x: _ex2(_f32(x) * _LOG2E),
    "fast_exp10f": lambda x: _ex2(_f32(x) * _LOG2_10),
    "fast_log2f": _lg2,
    "fast_logf": lambda x: _f32(_f32(_lg2(x)) * _LN2),
    "fast_log10f": lambda x: _f32(_f32(_lg2(x)) * _LOG10_2),
    "fast_sinf": _sin,
    "fast_cosf": _cos,
    "fast_tanf": lambda x: _divide(_sin(x), _cos(x)),
    "fast_tanhf": lambda x: np.tanh(_f32(x).astype(np.float64)) * (1.0 + _TANH_RELATIVE * _wobble(x, 7)),
}
FAST_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "fast_powf": lambda x, y: _ex2(_f32(y) * _f32(_lg2(x))),
    "fast_dividef": _divide,
}
FAST_UNARY = {name: _noted(name, fn) for name, fn in FAST_UNARY.items()}
FAST_BINARY = {name: _noted(name, fn) for name, fn in FAST_BINARY.items()}
