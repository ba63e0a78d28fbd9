"""libdevice's fast_* functions in the interpret backend: the GPU's approximations, each wrong by no more than its
documented bound and by more than nothing, the same way for the same operand."""

from __future__ import annotations

import numpy as np
import pytest

from adaexplore.executor.worker.cpu._fast_math import FAST_BINARY, FAST_UNARY

RNG = np.random.default_rng(7)


def f32(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float32).astype(np.float64)


# name, operands (float32 values), exact result, error measure, documented bound
UNARY = [
    ("fast_sinf", f32(RNG.uniform(-np.pi, np.pi, 20000)), np.sin, "absolute", 2.0**-21.41),
    ("fast_cosf", f32(RNG.uniform(-np.pi, np.pi, 20000)), np.cos, "absolute", 2.0**-21.19),
    ("fast_log2f", f32(RNG.uniform(0.5, 2.0, 20000)), np.log2, "absolute", 2.0**-22),
    ("fast_logf", f32(RNG.uniform(0.5, 2.0, 20000)), np.log, "absolute", 2.0**-21.41),
    ("fast_tanhf", f32(RNG.uniform(-4.0, 4.0, 20000)), np.tanh, "relative", 2.0**-10.987),
    # 2 + floor(1.173 |x|) ulp (the rounding of x * log2(e) in float32 is most of it for large x)
    ("fast_expf", f32(RNG.uniform(-10.0, 10.0, 20000)), np.exp, "ulp", 2 + 1.173 * 10),
]


@pytest.mark.parametrize(("name", "x", "exact", "measure", "bound"), UNARY, ids=[u[0] for u in UNARY])
def test_each_approximation_errs_within_its_documented_bound_and_is_not_exact(name, x, exact, measure, bound) -> None:
    got, want = FAST_UNARY[name](x), exact(x)
    if measure == "absolute":
        error = np.abs(got - want)
    elif measure == "relative":
        error = np.abs(got / want - 1.0)
    else:
        error = np.abs(got - want) / np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    assert error.max() <= bound
    assert error.max() > bound / 8  # an error of the documented size, not float32's rounding alone
    assert np.array_equal(FAST_UNARY[name](x), got)  # the same operands err the same way


def test_an_approximate_tangent_fails_near_its_poles_and_a_quotient_past_2_to_126_is_zero() -> None:
    near = f32(np.linspace(1.5704, 1.5707, 1000))
    relative = np.abs(FAST_UNARY["fast_tanf"](near) / np.tan(near) - 1.0)
    assert np.median(relative) > 1e-4  # float32's tolerance is 1e-5 of that
    assert FAST_BINARY["fast_dividef"](np.array([1.0]), np.array([2.0**127]))[0] == 0.0
    quotient = FAST_BINARY["fast_dividef"](np.array([3.0]), np.array([7.0]))[0]
    assert quotient != 3.0 / 7.0 and abs(quotient / (3.0 / 7.0) - 1.0) <= 2.0**-22
