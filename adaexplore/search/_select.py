"""Selection: descend from the root by UCT, stopping to expand where the expand score wins, then choose
between a small and a large step (reference §1.4–1.5)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Protocol

from adaexplore.config import SearchConfig
from adaexplore.domain import Kind
from adaexplore.search._best import TieBreak, tie_order
from adaexplore.search._nodes import NodeStats
from adaexplore.search._uct import expand_score, uct_score

__all__ = ["Decision", "Selection", "TreeView", "choose_action", "select"]


class TreeView(Protocol):
    """Read access to one run's tree, whether it lives in memory or in the store."""

    def node(self, node_id: int) -> NodeStats: ...

    def children(self, node_id: int) -> list[NodeStats]: ...

    def segment_best(self, segment: int) -> NodeStats | None: ...

    def segment_bests(self) -> list[NodeStats]: ...


@dataclass(frozen=True)
class Decision:
    """What decided one level of the descent."""

    node: int
    expand_score: float
    best_child: int | None
    best_child_score: float | None
    expanded: bool
    # the other children whose UCT score equals the best child's (untimed correct kernels often do): the best
    # child is the lowest by the tie-break key when one is given (then the first), else the first of them
    tied: tuple[int, ...] = ()


@dataclass
class Selection:
    node: int
    action: Kind
    trail: list[Decision] = field(default_factory=list)
    # Why this action: "root", "small-step limit", "random draw < p_large" or "random draw >= p_large".
    reason: str = ""


def select(
    view: TreeView, root: int, config: SearchConfig, rng: random.Random, tie_break: TieBreak | None = None
) -> Selection:
    """The node to expand and the action to take there. Among children of equal UCT score the first wins (as
    in the authors' code), or the one `tie_break` ranks lowest when it is given."""
    weight = config.exploration_weight
    weight_expand = weight * config.expand_exploration_ratio
    trail: list[Decision] = []
    current = view.node(root)
    while True:
        children = view.children(current.id)
        expand = expand_score(children, current.visits, weight_expand, config.reward_alpha)
        if not children:
            trail.append(Decision(current.id, expand, None, None, True))
            break
        scores = [uct_score(c, current.visits, weight, config.reward_alpha) for c in children]
        top = max(scores)
        equal = [i for i in range(len(children)) if scores[i] == top]
        best = equal[0] if tie_break is None else min(equal, key=lambda i: (tie_order(tie_break, children[i]), i))
        tied = tuple(children[i].id for i in equal if i != best)
        if expand > scores[best]:
            trail.append(Decision(current.id, expand, children[best].id, scores[best], True, tied))
            break
        trail.append(Decision(current.id, expand, children[best].id, scores[best], False, tied))
        current = children[best]
    action, reason = choose_action(current, config, rng)
    return Selection(node=current.id, action=action, trail=trail, reason=reason)


def choose_action(node: NodeStats, config: SearchConfig, rng: random.Random) -> tuple[Kind, str]:
    """The root takes a large step; another node a large step once it has `small_step_limit` small-step
    children, or with probability `p_large`."""
    if node.kind is Kind.root:
        return Kind.large, "root"
    if node.small_children >= config.small_step_limit:
        return Kind.large, "small-step limit"
    if rng.random() < config.p_large:
        return Kind.large, "random draw < p_large"
    return Kind.small, "random draw >= p_large"
