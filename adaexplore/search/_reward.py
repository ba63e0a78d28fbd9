"""The reward of an evaluation (DESIGN §7)."""

from __future__ import annotations

from adaexplore.search._nodes import compiled, correct

__all__ = ["reward", "untimed_note"]


def reward(status: str, speedup: float | None, cap: float | None = 10.0) -> float:
    """0 if it did not compile, 0.05 if it compiled but is wrong, 0.4 + 1.2*(clip(s, 0.1, cap) - 0.1)/9.9 if
    correct. With `cap=None` the reward keeps rising past 10x. `speedup` is the measured one, or where nothing
    timed the kernel its estimated one; a correct kernel with neither counts as speedup 1."""
    if not compiled(status):
        return 0.0
    if not correct(status):
        return 0.05
    s = max(speedup if speedup is not None else 1.0, 0.1)
    if cap is not None:
        s = min(s, cap)
    return 0.4 + 1.2 * (s - 0.1) / 9.9


def untimed_note(
    status: str, speedup: float | None, cap: float | None = 10.0, estimated: float | None = None, gpu: str = ""
) -> str | None:
    """What to say about the reward of a correct kernel that was not timed (None for any other): it comes from
    the estimated speedup where there is one, else from speedup 1, as every such kernel's does (they tie)."""
    if not correct(status) or speedup is not None:
        return None
    if estimated is not None:
        on = f" on an {gpu}" if gpu else ""
        return (
            f"untimed: correct, and nothing timed it (no GPU), so its reward {reward(status, estimated, cap):.3f} "
            f"comes from its estimated speedup, {estimated:.2f}x{on}, not a measurement"
        )
    return (
        f"untimed: correct, but nothing timed it (no GPU) and it has no estimate, so its reward "
        f"{reward(status, None, cap):.3f} is that of speedup 1; it ties with every such kernel"
    )
