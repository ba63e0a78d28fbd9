"""The estimate refitted to a GPU's verdicts (`adaexplore calibrate`'s fit): on kernels whose measured times a
known set of factors made, the fit finds those factors again, and scores itself on problems it did not see."""

from __future__ import annotations

import pytest

from adaexplore.roofline import (
    CALIBRATION,
    FACTOR_GROUPS,
    MIN_KERNELS,
    GpuCalibration,
    base_digest,
    refit,
)
from tests.synthetic_verdicts import H200, TRUE, corpus


def test_the_fit_recovers_the_factors_that_made_the_times() -> None:
    fit = refit(corpus(32, problems=8), H200)
    for group, factor in TRUE.items():
        assert fit.factors[group] == pytest.approx(factor, rel=0.1), (group, fit.factors)
    assert fit.kernels == 32 and fit.problems == 8 and fit.held_out == "leave one problem out"
    # on problems it did not see, the fit's estimates sit within the noise of the times; the package's do not
    assert fit.error_after < 0.05 < 0.15 < fit.error_before
    assert fit.speedup_error_after < fit.speedup_error_before


def test_one_problem_is_held_out_by_folds_of_its_kernels() -> None:
    fit = refit(corpus(MIN_KERNELS, problems=1), H200)
    assert fit.held_out == "5 folds of one problem's kernels" and fit.error_after < fit.error_before


def test_too_few_kernels_are_refused() -> None:
    with pytest.raises(ValueError, match=f"{MIN_KERNELS - 1} kernels, {MIN_KERNELS} needed"):
        refit(corpus(MIN_KERNELS - 1), H200)


def test_a_calibration_scales_its_groups_and_knows_whose_efficiencies_it_multiplies() -> None:
    cal = GpuCalibration(
        gpu="H200", factors={"memory": 0.5}, kernels=30, problems=3, held_out="leave one problem out",
        error_before=0.4, error_after=0.2, created_at="2026-12-07T10:00:00+00:00", id=3,
    )  # fmt: skip
    applied = cal.applied()
    assert applied.memory == pytest.approx(CALIBRATION.memory / 2)
    assert applied.cache_rate == pytest.approx(CALIBRATION.cache_rate / 2)
    assert applied.tensor_cores == CALIBRATION.tensor_cores
    assert set(FACTOR_GROUPS) >= set(cal.factors)
    assert cal.current and cal.base == base_digest()
    assert cal.label() == "calibration 3 (H200, 2026-12-07: 30 kernels, held-out error 0.40 -> 0.20)"
    stale = cal.model_copy(update={"base": "0123456789ab"})
    assert not stale.current
