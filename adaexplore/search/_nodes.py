"""What the search knows about a node: its place in the tree, its verdict and its statistics."""

from __future__ import annotations

from dataclasses import dataclass

from adaexplore.domain import Kind, Status

__all__ = ["NodeStats", "compiled", "correct"]

_NOT_COMPILED = frozenset({Status.syntax_error, Status.compile_error})


def compiled(status: str | None) -> bool:
    """Whether a verdict's kernel got past compiling. `status` is a `Status` or its value as the store keeps it
    (a `Status` is a str enum, so either compares equal)."""
    return status is not None and status not in _NOT_COMPILED


def correct(status: str | None) -> bool:
    return status == Status.ok


@dataclass(frozen=True)
class NodeStats:
    """One node as the search sees it. `segment` is the id of the large-step node heading its segment
    (None for the root)."""

    id: int
    parent: int | None
    kind: Kind
    depth: int
    segment: int | None
    status: str | None
    speedup: float | None
    visits: int
    total_reward: float
    max_reward: float
    small_children: int
    children: int
    # where nothing timed it: the speedup its estimate predicts on the target GPU (never a measurement)
    estimated_speedup: float | None = None

    @property
    def rank_speed(self) -> tuple[int, float]:
        """What correct kernels are ranked by: a measured speedup first (every measured kernel ranks above every
        estimated one, so the two are never compared), then an estimated one, then 1 (neither)."""
        if self.speedup is not None:
            return (2, self.speedup)
        if self.estimated_speedup is not None:
            return (1, self.estimated_speedup)
        return (0, 1.0)

    @property
    def mean_reward(self) -> float:
        return self.total_reward / self.visits if self.visits else 0.0

    @property
    def correct(self) -> bool:
        return correct(self.status)

    @property
    def score(self) -> tuple[int, int, int, float]:
        """Lexicographic quality: compiled, then correct, then speed (`rank_speed`)."""
        if not correct(self.status):
            return (int(compiled(self.status)), 0, 0, 0.0)
        return (1, 1, *self.rank_speed)
