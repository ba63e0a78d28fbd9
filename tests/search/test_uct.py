"""Scores against values computed by hand."""

import math

import pytest

from adaexplore.domain import Kind
from adaexplore.search import NodeStats, expand_score, q_value, reward, uct_score


def stats(visits: int, total: float, best: float, node_id: int = 1) -> NodeStats:
    return NodeStats(
        id=node_id,
        parent=0,
        kind=Kind.small,
        depth=1,
        segment=1,
        status="ok",
        speedup=1.0,
        visits=visits,
        total_reward=total,
        max_reward=best,
        small_children=0,
        children=0,
    )


@pytest.mark.parametrize(("alpha", "expected"), [(0.0, 0.5), (1.0, 0.6), (0.5, 0.55)])
def test_q_mixes_max_and_mean(alpha: float, expected: float) -> None:
    assert q_value(stats(2, 1.0, 0.6), alpha) == pytest.approx(expected)


def test_uct_score_by_hand() -> None:
    # 0.5 + 0.3 * sqrt(ln 10 / 2) = 0.5 + 0.3 * 1.0729830
    assert uct_score(stats(2, 1.0, 0.6), 10, 0.3, 0.0) == pytest.approx(0.8218949, abs=1e-6)
    assert uct_score(stats(2, 1.0, 0.6), 10, 0.3, 1.0) == pytest.approx(0.9218949, abs=1e-6)


def test_an_unvisited_child_is_infinitely_attractive() -> None:
    assert uct_score(stats(0, 0.0, 0.0), 10, 0.3, 0.0) == math.inf


def test_expand_score_by_hand() -> None:
    children = [stats(2, 1.0, 0.6, 1), stats(1, 0.7, 0.7, 2)]
    # max Q = 0.7; 0.3 * sqrt(ln 10 / 2^2) = 0.3 * 0.7587136
    assert expand_score(children, 10, 0.3, 0.0) == pytest.approx(0.9276141, abs=1e-6)


def test_a_leaf_is_always_expanded_and_a_zero_weight_never() -> None:
    assert expand_score([], 5, 0.3, 0.0) == math.inf
    assert expand_score([stats(1, 0.5, 0.5)], 5, 0.0, 0.0) == -math.inf


@pytest.mark.parametrize(
    ("status", "speedup", "cap", "expected"),
    [
        ("compile_error", None, 10.0, 0.0),
        ("syntax_error", None, 10.0, 0.0),
        ("mismatch", None, 10.0, 0.05),
        ("runtime_error", None, 10.0, 0.05),
        ("ok", 1.0, 10.0, 0.5090909),
        ("ok", 2.0, 10.0, 0.6303030),
        ("ok", 5.0, 10.0, 0.9939394),
        ("ok", 0.01, 10.0, 0.4),
        ("ok", 20.0, 10.0, 1.6),
        ("ok", 20.0, None, 2.8121212),
        ("ok", None, 10.0, 0.5090909),
    ],
)
def test_reward_by_hand(status: str, speedup: float | None, cap: float | None, expected: float) -> None:
    assert reward(status, speedup, cap) == pytest.approx(expected, abs=1e-6)
