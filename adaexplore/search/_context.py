"""What a step sees: the working memory of a small step and the pool of a large step (reference §1.6–1.7)."""

from __future__ import annotations

import math
import random

from adaexplore.config import SearchConfig
from adaexplore.domain import Kind
from adaexplore.search._nodes import NodeStats
from adaexplore.search._select import TreeView

__all__ = ["path_to_root", "pool", "working_memory"]


def path_to_root(view: TreeView, node_id: int) -> list[NodeStats]:
    """The node and its ancestors, the node first."""
    path = [view.node(node_id)]
    while path[-1].parent is not None:
        path.append(view.node(path[-1].parent))
    return path


def working_memory(view: TreeView, node_id: int, rounds: int) -> list[NodeStats]:
    """The chain from the nearest large-step ancestor (inclusive) down to the node, oldest first, cut to
    the last `rounds` nodes. It never crosses a segment boundary."""
    chain: list[NodeStats] = []
    current = view.node(node_id)
    while current.kind is not Kind.root:
        chain.append(current)
        if current.kind is Kind.large or current.parent is None:
            break
        current = view.node(current.parent)
    chain.reverse()
    return chain[-rounds:]


def pool(view: TreeView, node_id: int, config: SearchConfig, rng: random.Random) -> list[NodeStats]:
    """The best correct kernel of each segment on the path from the root to the node (one per segment),
    sampled down to `pool_size`. Where that leaves room, the best kernels of the run's other branches fill it,
    fastest first (`pool_other_branches`, so that a large step from the root sees what the run has found), or,
    with that off, the authors' random off-path extras when `pool_extra_max` > 0."""
    path = path_to_root(view, node_id)
    heads = [n.id for n in reversed(path) if n.kind is Kind.large]
    representatives = [best for head in heads if (best := view.segment_best(head)) is not None]
    if len(representatives) > config.pool_size:
        keep = set(rng.sample(range(len(representatives)), config.pool_size))
        representatives = [r for i, r in enumerate(representatives) if i in keep]
    on_path = set(heads)
    others = [b for b in view.segment_bests() if b.segment not in on_path]
    if config.pool_other_branches:
        room = config.pool_size - len(representatives)
        # fastest first; among equals the earlier found (a stable sort over segment order)
        return representatives + sorted(others, key=lambda n: n.rank_speed, reverse=True)[: max(room, 0)]
    room = min(config.pool_size - len(representatives), config.pool_extra_max)
    if room > 0:
        representatives += _extras(others, room, config, rng)
    return representatives


def _extras(candidates: list[NodeStats], room: int, config: SearchConfig, rng: random.Random) -> list[NodeStats]:
    """k ~ truncated geometric P(k) ∝ (1-p)^k on 0..room, then k drawn without replacement with probability
    softmax(speedup / temperature)."""
    limit = min(room, len(candidates))
    if limit == 0:
        return []
    weights = [(1 - config.geometric_p) ** k for k in range(limit + 1)]
    k = rng.choices(range(limit + 1), weights=weights)[0]
    chosen: list[NodeStats] = []
    remaining = list(candidates)
    for _ in range(k):
        logits = [c.rank_speed[1] / config.softmax_temperature for c in remaining]
        top = max(logits)
        probabilities = [math.exp(x - top) for x in logits]
        index = rng.choices(range(len(remaining)), weights=probabilities)[0]
        chosen.append(remaining.pop(index))
    return chosen
