"""The third merging tier: a model decides whether a new rule says the same as an existing one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["RuleCandidate", "RuleJudge"]


@dataclass(frozen=True)
class RuleCandidate:
    rule_id: int
    text: str
    similarity: float


class RuleJudge(Protocol):
    async def same_rule(self, text: str, candidates: list[RuleCandidate]) -> int | None:
        """The id of the candidate that states the same rule as `text`, or None."""
        ...
