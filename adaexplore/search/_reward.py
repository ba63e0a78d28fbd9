"""The reward of an evaluation (DESIGN §7)."""

from __future__ import annotations

from adaexplore.search._nodes import compiled, correct

__all__ = ["reward", "untimed_note"]


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


def untimed_note(status: str, speedup: float | None, cap: float | None = 10.0) -> str | None:
    """What to say about the reward of a correct kernel that was not timed (None for any other): its reward
    is that of speedup 1, the same for every correct kernel of an untimed search, so they tie."""
    if not correct(status) or speedup is not None:
        return None
    return (
        f"untimed: correct, but nothing timed it (no GPU), so its reward {reward(status, None, cap):.3f} is the one "
        "every untimed correct kernel gets; they tie on speed"
    )
