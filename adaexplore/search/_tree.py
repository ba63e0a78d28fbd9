"""A tree held in memory: the reference the store is tested against, and a search without a database."""

from __future__ import annotations

from dataclasses import replace

from adaexplore.domain import Kind
from adaexplore.search._best import best_correct
from adaexplore.search._nodes import NodeStats

__all__ = ["Tree"]


class Tree:
    """Nodes with their statistics; `add` inserts an evaluated child and back-propagates its reward."""

    def __init__(self) -> None:
        self._nodes: dict[int, NodeStats] = {}
        self._children: dict[int, list[int]] = {}
        self.root = self._put(
            NodeStats(
                id=0,
                parent=None,
                kind=Kind.root,
                depth=0,
                segment=None,
                status=None,
                speedup=None,
                visits=0,
                total_reward=0.0,
                max_reward=0.0,
                small_children=0,
                children=0,
            )
        )

    def _put(self, node: NodeStats) -> int:
        self._nodes[node.id] = node
        self._children.setdefault(node.id, [])
        return node.id

    def __len__(self) -> int:
        return len(self._nodes)

    def node(self, node_id: int) -> NodeStats:
        return self._nodes[node_id]

    def children(self, node_id: int) -> list[NodeStats]:
        return [self._nodes[c] for c in self._children[node_id]]

    def nodes(self) -> list[NodeStats]:
        return list(self._nodes.values())

    def segment_best(self, segment: int) -> NodeStats | None:
        members = [n for n in self._nodes.values() if n.segment == segment and n.correct]
        return max(members, key=lambda n: (n.score, -n.id), default=None)

    def segment_bests(self) -> list[NodeStats]:
        heads = [n.id for n in self._nodes.values() if n.kind is Kind.large]
        return [best for head in heads if (best := self.segment_best(head)) is not None]

    def best(self) -> NodeStats | None:
        """The global best: the fastest correct node, the first found on ties; never an incorrect one."""
        best = best_correct(self._nodes.values())
        return best.node if best else None

    def add(
        self,
        parent: int,
        kind: Kind,
        status: str,
        speedup: float | None,
        reward: float,
        estimated_speedup: float | None = None,
    ) -> NodeStats:
        """Insert an evaluated child of `parent` and add its reward to it and every ancestor."""
        if kind is Kind.root:
            raise ValueError("a tree has one root")
        up = self._nodes[parent]
        new_id = max(self._nodes) + 1
        segment = new_id if kind is Kind.large else up.segment
        node = NodeStats(
            id=new_id,
            parent=parent,
            kind=kind,
            depth=up.depth + 1,
            segment=segment,
            status=status,
            speedup=speedup,
            visits=0,
            total_reward=0.0,
            max_reward=0.0,
            small_children=0,
            children=0,
            estimated_speedup=estimated_speedup,
        )
        self._put(node)
        self._children[parent].append(new_id)
        self._nodes[parent] = replace(
            up, children=up.children + 1, small_children=up.small_children + (kind is Kind.small)
        )
        current: int | None = new_id
        while current is not None:
            n = self._nodes[current]
            self._nodes[current] = replace(
                n, visits=n.visits + 1, total_reward=n.total_reward + reward, max_reward=max(n.max_reward, reward)
            )
            current = n.parent
        return self._nodes[new_id]
