"""UCT with the expand option, as AdaExplore scores it."""

from __future__ import annotations

import math

from adaexplore.search._nodes import NodeStats

__all__ = ["expand_score", "q_value", "uct_score"]


def q_value(node: NodeStats, alpha: float) -> float:
    """alpha*max + (1 - alpha)*mean of the node's rewards."""
    return alpha * node.max_reward + (1 - alpha) * node.mean_reward


def uct_score(child: NodeStats, parent_visits: int, weight: float, alpha: float) -> float:
    """Q + w*sqrt(ln N(parent) / N(child)); infinite for an unvisited child."""
    if child.visits == 0:
        return math.inf
    return q_value(child, alpha) + weight * math.sqrt(math.log(max(parent_visits, 1)) / child.visits)


def expand_score(children: list[NodeStats], visits: int, weight: float, alpha: float) -> float:
    """max child Q + w_e*sqrt(ln N / K^2) over K children; infinite for a leaf, -infinite when w_e <= 0."""
    if not children:
        return math.inf
    if weight <= 0:
        return -math.inf
    k = len(children)
    return max(q_value(c, alpha) for c in children) + weight * math.sqrt(math.log(max(visits, 1)) / k**2)
