"""The best correct kernel of a search, and what to say when correct kernels cannot be told apart.

Correct kernels are ranked by their measured speedup, or where nothing timed them by their estimated one (every
measured kernel above every estimated one: the two are never compared), else they count as speedup 1. They tie
when their speed is the same: always where there is neither measurement nor estimate, and now and then when two
come out the same. A tie is broken by `TieBreak`, a key where lower is better (None: the node has none, and ranks
after those that do), then by the node id (the first found). Without a key the first found wins. The tools pass
the static cost of the sm_90 compile (tools/_best.py); `tie_phrase` says which rule chose.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from adaexplore.search._nodes import NodeStats

__all__ = ["SearchBest", "TieBreak", "best_correct", "speed_key", "tie_order", "tie_phrase"]

# The tie-break hook: a key on a node, lower is better (None: it has none), used only among nodes that tie on
# speed or score.
TieBreak = Callable[[NodeStats], tuple[float, ...] | float | None]


def speed_key(node: NodeStats) -> tuple[int, float]:
    """The speed the search ranks correct kernels by (`NodeStats.rank_speed`): measured, else estimated, else 1."""
    return node.rank_speed


def tie_order(tie_break: TieBreak | None, node: NodeStats) -> tuple[object, ...]:
    """Where `node` ranks among those it ties with, lowest first: by its key (a node without one after those
    with one), then by its id (the first found)."""
    if tie_break is None:
        return (node.id,)
    key = tie_break(node)
    return (key is None, () if key is None else key, node.id)


def tie_phrase(
    tie_break: TieBreak | None,
    tie_break_name: str,
    winner: NodeStats | None = None,
    others: Sequence[NodeStats] = (),
) -> str:
    """How `winner` was chosen among `others` it tied with, in words: the one with the lowest key, the first found
    of those with the lowest (some share it), or the first found (no key, or none of them has one)."""
    if tie_break is None:
        return "the first found"
    if winner is None:
        return f"the one with the lowest {tie_break_name}"
    key = tie_break(winner)
    if key is None:
        return f"the first found (none has a {tie_break_name} to tell them apart)"
    if any(tie_break(other) == key for other in others):
        return f"the first found of those with the lowest {tie_break_name}"
    return f"the one with the lowest {tie_break_name}"


@dataclass(frozen=True)
class SearchBest:
    """The best correct node as measured during the search."""

    node: NodeStats
    tied: tuple[int, ...]  # the other correct nodes of the same speed, in id order
    timed: bool  # whether the winner's speed was measured
    correct: int  # how many correct nodes there are
    why: str  # why this node, in words
    tie_rule: str = "the first found"  # how it was chosen among `tied` (tie_phrase)
    estimated: bool = False  # whether it was chosen by its estimated speedup (nothing timed it)


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
    winner = min(equal, key=lambda n: tie_order(tie_break, n))
    tied = tuple(n.id for n in equal if n.id != winner.id)
    timed = winner.speedup is not None
    estimated = not timed and winner.estimated_speedup is not None
    how = tie_phrase(tie_break, tie_break_name, winner, [n for n in equal if n.id != winner.id])
    if estimated:
        others = f" of {len(candidates)} correct kernels" if len(candidates) > 1 else ""
        why = f"the fastest by its estimated speedup{others} (no GPU timed them; an estimate, not a measurement)"
        if tied:
            why += f", tied with node(s) {', '.join(str(i) for i in tied)}; node {winner.id} is {how}"
    elif not timed:
        if tied:
            why = f"untimed: no GPU timed the {len(equal)} correct kernels, so they tie; node {winner.id} is {how}"
        else:
            why = "untimed: the only correct kernel, and no GPU timed it"
    elif tied:
        others = ", ".join(str(i) for i in tied)
        why = f"the fastest correct kernel measured, tied with node(s) {others}; node {winner.id} is {how}"
    else:
        why = "the fastest correct kernel measured during the search"
    return SearchBest(
        node=winner, tied=tied, timed=timed, correct=len(candidates), why=why, tie_rule=how, estimated=estimated
    )
