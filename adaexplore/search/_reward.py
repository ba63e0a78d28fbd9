"""The reward of an evaluation (DESIGN §7)."""

from __future__ import annotations

from adaexplore.search._nodes import compiled, correct

__all__ = ["reward"]


def reward(status: str, speedup: float | None, cap: float | None = 10.0) -> float:
    """0 if it did not compile, 0.05 if it compiled but is wrong, 0.4 + 1.2*(clip(s, 0.1, cap) - 0.1)/9.9 if
    correct. With `cap=None` the reward keeps rising past 10x. A correct kernel that was not timed (no GPU)
    counts as speedup 1."""
    if not compiled(status):
        return 0.0
    if not correct(status):
        return 0.05
    s = max(speedup if speedup is not None else 1.0, 0.1)
    if cap is not None:
        s = min(s, cap)
    return 0.4 + 1.2 * (s - 0.1) / 9.9
