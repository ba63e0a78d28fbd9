"""The tensor cores' emulation (`_tensor_cores.mma`) computes what its term-by-term form computes, bit for bit, while
computing each distinct row and column of a tile once: a GEMM tile larger than the tensor it covers (rows loaded as
zeros, or wrapped onto real rows) costs what its distinct rows cost."""

from __future__ import annotations

import time

import numpy as np
import pytest

from adaexplore.executor.worker.cpu import _tensor_cores as tensor_cores


def _case(rng: np.random.Generator, m: int, k: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    scale = 10.0 ** rng.integers(-20, 20)
    a = tensor_cores.tf32((rng.standard_normal((m, k)) * scale).astype(np.float32))
    b = tensor_cores.tf32(rng.standard_normal((k, n)).astype(np.float32))
    acc = (rng.standard_normal((m, n)) * scale * 10.0 ** rng.integers(-3, 3)).astype(np.float32)
    a[rng.random(a.shape) < 0.2] = 0
    a[m // 2 :] = a[0]  # repeated rows, with their accumulators
    acc[m // 2 :] = acc[0]
    b[:, n // 2 :] = 0  # padding columns
    acc[:, n // 2 :] = 0
    return a, b, acc


@pytest.mark.parametrize("seed", range(6))
def test_the_fast_path_is_bit_for_bit_the_term_by_term_one(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m, k, n = (int(v) for v in rng.integers(2, 70, 3))
    a, b, acc = _case(rng, m, k, n)
    fast = tensor_cores.mma(a, b, acc)
    slow = tensor_cores._with_infinities(a, b, acc)  # the term-by-term form, on finite values
    assert fast.dtype == np.float32 and fast.shape == (m, n)
    assert np.array_equal(fast.view(np.uint32), slow.view(np.uint32))


def test_batched_operands_and_infinities_follow_the_same_rules() -> None:
    rng = np.random.default_rng(7)
    a, b, acc = _case(rng, 8, 16, 8)
    batched = tensor_cores.mma(np.stack([a, a * 2]), np.stack([b, b]), np.stack([acc, acc * 2]))
    assert np.array_equal(batched[0], tensor_cores.mma(a, b, acc))
    assert np.array_equal(batched[1], tensor_cores.mma(a * 2, b, acc * 2))
    a[0, 0], b[0, 0] = np.inf, 1.0
    with_inf = tensor_cores.mma(a, b, acc)
    assert np.isinf(with_inf[0, 0]) and np.isfinite(with_inf[1:]).all()


def test_a_mostly_padded_tile_costs_its_distinct_rows() -> None:
    rng = np.random.default_rng(8)
    a = tensor_cores.tf32(rng.standard_normal((128, 256)).astype(np.float32))
    b = tensor_cores.tf32(rng.standard_normal((256, 256)).astype(np.float32))
    acc = np.zeros((128, 256), np.float32)
    a[16:], b[:, 17:] = 0, 0  # a 16 x 17 output in a 128 x 256 tile
    started = time.perf_counter()
    out = tensor_cores.mma(a, b, acc)
    padded = time.perf_counter() - started
    started = time.perf_counter()
    small = tensor_cores.mma(a[:16], b[:, :17], acc[:16, :17])
    alone = time.perf_counter() - started
    assert np.array_equal(out[:16, :17], small) and not out[16:].any() and not out[:, 17:].any()
    assert padded < 5 * alone + 0.05  # not 120 times the work
