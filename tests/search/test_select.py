"""Selection on trees whose outcome under the authors' rules is worked out by hand."""

import random

from adaexplore.config import SearchConfig
from adaexplore.domain import Kind
from adaexplore.search import Tree, choose_action, reward, select


class Draws(random.Random):
    """A random source whose random() returns a script."""

    def __init__(self, values: list[float]) -> None:
        super().__init__(0)
        self.values = list(values)

    def random(self) -> float:
        return self.values.pop(0)


def test_a_scripted_tree_is_grown_in_the_order_the_rules_give() -> None:
    # Worked by hand with w = w_e = 0.3, alpha = 0 (see the comments for the deciding numbers).
    tree, config = Tree(), SearchConfig()
    draws = Draws([0.5, 0.1])
    outcomes = [("ok", 1.0), ("mismatch", None), ("ok", 2.0), ("ok", 1.5)]
    trace = []
    for status, speedup in outcomes:
        chosen = select(tree, tree.root, config, draws)
        trace.append((chosen.node, chosen.action))
        tree.add(chosen.node, chosen.action, status, speedup, reward(status, speedup))
    # 1. root is a leaf: large. 2. expand(root) = UCT(1) = 0.509, no strict win: descend; node 1 is a leaf,
    # draw 0.5 >= 0.2: small. 3. expand(root) 0.529 > UCT(1) 0.456: large at the root. 4. UCT(3) 0.945 beats
    # expand(root) 0.788 and UCT(1) 0.502: node 3, a leaf, draw 0.1 < 0.2: large.
    assert trace == [(0, Kind.large), (1, Kind.small), (0, Kind.large), (3, Kind.large)]
    assert draws.values == []


def test_the_trail_explains_the_decision() -> None:
    tree, config = Tree(), SearchConfig()
    tree.add(0, Kind.large, "ok", 2.0, reward("ok", 2.0))
    chosen = select(tree, tree.root, config, Draws([0.9]))
    assert [d.node for d in chosen.trail] == [0, 1]
    assert chosen.trail[0].expanded is False and chosen.trail[0].best_child == 1
    assert chosen.trail[1].expanded is True and chosen.reason == "random draw >= p_large"


def test_a_node_with_enough_small_children_takes_a_large_step_without_a_draw() -> None:
    tree, config = Tree(), SearchConfig(small_step_limit=2)
    head = tree.add(0, Kind.large, "ok", 1.0, 0.5)
    tree.add(head.id, Kind.small, "ok", 1.0, 0.5)
    tree.add(head.id, Kind.small, "ok", 1.0, 0.5)
    draws = Draws([])
    assert choose_action(tree.node(head.id), config, draws) == (Kind.large, "small-step limit")


def test_the_root_always_takes_a_large_step() -> None:
    tree = Tree()
    assert choose_action(tree.node(0), SearchConfig(p_large=0.0), Draws([])) == (Kind.large, "root")
