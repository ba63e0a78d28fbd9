"""fp32 `tl.dot` as an H200's tensor cores compute it, for the interpreter (pure numpy).

Recorded on an H200 with `benchmarks/tf32_probe.py` (and `--long`), and replayed by
`tests/executor/worker/test_interpret_precision.py`:

- a `tf32` operand keeps the top 10 explicit mantissa bits of its fp32 value and drops the other 13
  (truncation, not rounding);
- products are exact, and the tensor cores add them to the accumulator 8 at a time: the 8 products and the
  accumulator are aligned to the largest exponent among them, each is cut toward zero to 26 bits below that
  exponent, their sum is exact, and the new accumulator is that sum cut toward zero to fp32.

The alignment is why a small term added to a large accumulator loses its low bits: three `tf32` dots of a
hand-made high/low split, chained on one accumulator over a long reduction, err by 5.8e-5 on the H200 (over
strict mode's fp32 tolerance), where exact fp32 accumulation gives 5e-7. Triton's own `tf32x3` sums the two
small products into a fresh accumulator first, and so keeps them. With these rules 95-98% of the recorded
outputs match the GPU's bit for bit, and the rest lie within 1.3e-7 of it (relative to the largest output).
Other calibrations were tried against the same recording (groups of 4 or 16, 23 to 27 bits, rounding to
nearest): the best of them misses by 9e-6.
"""

from __future__ import annotations

import numpy as np

__all__ = ["GROUP", "KEPT_BITS", "mma", "tf32", "tf32_nearest"]

GROUP = 8
KEPT_BITS = 26
_TF32_KEEP = np.uint32(0xFFFFE000)


def tf32(values: np.ndarray) -> np.ndarray:
    """fp32 values as a tensor core reads them for a tf32 product: the low 13 mantissa bits dropped."""
    values = np.ascontiguousarray(values, dtype=np.float32)
    kept = (values.view(np.uint32) & _TF32_KEEP).view(np.float32)
    return np.where(np.isfinite(values), kept, values).astype(np.float32)


def tf32_nearest(values: np.ndarray) -> np.ndarray:
    """fp32 values rounded to tf32, to nearest with ties away from zero (`cvt.rna.tf32.f32`)."""
    values = np.ascontiguousarray(values, dtype=np.float32)
    rounded = ((values.view(np.uint32) + np.uint32(0x1000)) & _TF32_KEEP).view(np.float32)
    return np.where(np.isfinite(rounded), rounded, values).astype(np.float32)


def _toward_zero_f32(values: np.ndarray) -> np.ndarray:
    """float64 values cut toward zero to fp32."""
    nearest = values.astype(np.float32)
    away = np.abs(nearest.astype(np.float64)) > np.abs(values)
    return np.where(away, np.nextafter(nearest, np.float32(0)), nearest).astype(np.float32)


def mma(a: np.ndarray, b: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """acc + a @ b as the tensor cores accumulate it, for operands already in the precision they read (tf32,
    bf16 or fp16 values, as fp32); leading dimensions are batches, as tl.dot takes them.

    An output element depends on its row of `a`, its column of `b` and its own accumulator alone, so rows (and
    columns) that repeat both are computed once: a tile larger than the tensor it covers (rows of padding
    loaded as zeros, or wrapped around onto real rows) costs what its distinct rows cost."""
    acc = np.broadcast_to(np.asarray(acc, dtype=np.float32), (*a.shape[:-1], b.shape[-1]))
    if a.ndim > 2:
        return np.stack([mma(a[i], b[i], acc[i]) for i in range(a.shape[0])])
    if not (np.isfinite(a).all() and np.isfinite(b).all() and np.isfinite(acc).all()):
        return _with_infinities(a, b, acc)
    rows, row_of = _distinct(np.concatenate([_bits(a), _bits(acc)], axis=1))
    cols, col_of = _distinct(np.concatenate([_bits(b), _bits(acc)], axis=0).T)
    distinct = _finite_mma(a[rows], b[:, cols], acc[np.ix_(rows, cols)])
    return distinct[np.ix_(row_of, col_of)]


def _bits(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)


def _distinct(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The index of the first of each distinct row, and for every row which of them it equals."""
    keyed = np.ascontiguousarray(rows).view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    _, first, inverse = np.unique(keyed, return_index=True, return_inverse=True)
    return first, inverse.ravel()


def _finite_mma(a: np.ndarray, b: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """`mma` of finite 2-D operands: each group's terms scaled so that the quantum is 1 (a power of two, exact),
    cut by truncation, summed exactly in float64 (under 2**31 in all) and scaled back."""
    out = acc.astype(np.float64)
    a_t, b64 = np.ascontiguousarray(a.T, dtype=np.float64), b.astype(np.float64)
    for k in range(0, a.shape[1], GROUP):
        products = a_t[k : k + GROUP, :, None] * b64[k : k + GROUP, None, :]
        _, exponent = np.frexp(np.maximum(np.abs(products).max(axis=0), np.abs(out)))
        scale = np.ldexp(1.0, KEPT_BITS - exponent)
        total = np.trunc(products * scale).sum(axis=0) + np.trunc(out * scale)
        out = _toward_zero_f32(total / scale).astype(np.float64)
    return out.astype(np.float32)


def _with_infinities(a: np.ndarray, b: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """`mma` where an operand or the accumulator holds an infinity or NaN: term by term, as IEEE arithmetic
    takes them where they are, aligned and cut where all is finite."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    out = np.asarray(acc, dtype=np.float32)
    for k in range(0, a.shape[-1], GROUP):
        products = a64[..., :, k : k + GROUP, None] * b64[..., None, k : k + GROUP, :]
        terms = np.concatenate([out.astype(np.float64)[..., :, None, :], products], axis=-2)
        finite = np.isfinite(terms).all(axis=-2)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            _, exponent = np.frexp(np.where(np.isfinite(terms), np.abs(terms), 0.0).max(axis=-2))
            quantum = np.ldexp(1.0, exponent - KEPT_BITS)[..., :, None, :]
            cut = np.trunc(terms / quantum) * quantum
        aligned = _toward_zero_f32(cut.sum(axis=-2))
        out = np.where(finite, aligned, terms.sum(axis=-2).astype(np.float32)).astype(np.float32)
    return out
