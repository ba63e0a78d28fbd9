"""The best correct kernel of a search, and what to say when correct kernels cannot be told apart.

Correct kernels tie when their speed is the same: always when nothing was timed (no GPU: every correct kernel
counts as speedup 1 and gets the same reward), and now and then when two measured the same. A tie is broken by
`TieBreak`, a key where lower is better; without one (today) the first found, the lowest node id, wins. The
hook is meant for the static cost of the sm_90 compile (registers, spills, shared memory) once evaluations
carry it: pass a key built from it to `best_correct` and `select`, and name it in `tie_break_name`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from adaexplore.search._nodes import NodeStats

__all__ = ["SearchBest", "TieBreak", "best_correct", "speed_key", "tie_phrase"]

# The tie-break hook: a key on a node, lower is better, used only among nodes that tie on speed or score.
TieBreak = Callable[[NodeStats], float]


def speed_key(node: NodeStats) -> float:
    """The speed the search ranks correct kernels by: the measured speedup, 1 where nothing was timed."""
    return node.speedup if node.speedup is not None else 1.0


def tie_phrase(tie_break: TieBreak | None, tie_break_name: str) -> str:
    """How a tie was broken, in words: 'the first found' or 'the lowest <key>'."""
    return "the first found" if tie_break is None else f"the lowest {tie_break_name}"


@dataclass(frozen=True)
class SearchBest:
    """The best correct node as measured during the search."""

    node: NodeStats
    tied: tuple[int, ...]  # the other correct nodes of the same speed, in id order
    timed: bool  # whether the winner's speed was measured
    correct: int  # how many correct nodes there are
    why: str  # why this node, in words


def best_correct(
    nodes: Iterable[NodeStats], tie_break: TieBreak | None = None, tie_break_name: str = "tie-break key"
) -> SearchBest | None:
    """The fastest correct node; among equals the one `tie_break` ranks lowest, else the first found. None when
    no node is correct."""
    candidates = sorted((n for n in nodes if n.correct), key=lambda n: n.id)
    if not candidates:
        return None
    fastest = max(speed_key(n) for n in candidates)
    equal = [n for n in candidates if speed_key(n) == fastest]
    winner = equal[0] if tie_break is None else min(equal, key=lambda n: (tie_break(n), n.id))
    tied = tuple(n.id for n in equal if n.id != winner.id)
    timed = winner.speedup is not None
    how = tie_phrase(tie_break, tie_break_name)
    if not timed:
        if tied:
            why = (
                f"untimed: no GPU timed the {len(equal)} correct kernels, so they tie; node {winner.id} is {how} "
                "of them"
            )
        else:
            why = "untimed: the only correct kernel, and no GPU timed it"
    elif tied:
        others = ", ".join(str(i) for i in tied)
        why = f"the fastest correct kernel measured, tied with node(s) {others}; node {winner.id} is {how}"
    else:
        why = "the fastest correct kernel measured during the search"
    return SearchBest(node=winner, tied=tied, timed=timed, correct=len(candidates), why=why)
