"""Ties between correct kernels: which one is the best, which child UCT descends to, and what is said about it."""

import random

from adaexplore.config import SearchConfig
from adaexplore.domain import Kind, Status
from adaexplore.search import Tree, best_correct, reward, select, untimed_note
from adaexplore.search._nodes import compiled, correct


def untimed_tree() -> Tree:
    tree = Tree()
    tree.add(0, Kind.large, "mismatch", None, reward("mismatch", None))
    for _ in range(3):
        tree.add(0, Kind.large, "ok", None, reward("ok", None))
    return tree


def test_untimed_correct_kernels_tie_and_the_first_found_is_the_best() -> None:
    best = best_correct(untimed_tree().nodes())
    assert best is not None and best.node.id == 2 and best.tied == (3, 4) and not best.timed
    assert best.correct == 3
    assert best.why == "untimed: no GPU timed the 3 correct kernels, so they tie; node 2 is the first found"
    assert untimed_tree().best() == best.node


def test_a_tie_break_key_picks_among_equals_and_only_among_equals() -> None:
    tree = untimed_tree()
    cost = {2: 30.0, 3: 10.0, 4: 20.0}
    best = best_correct(tree.nodes(), lambda n: cost[n.id], "register count")
    assert best is not None and best.node.id == 3 and best.tied == (2, 4)
    assert "node 3 is the one with the lowest register count" in best.why
    tree.add(0, Kind.large, "ok", 1.2, reward("ok", 1.2))  # faster: the key does not overrule speed
    best = best_correct(tree.nodes(), lambda n: cost.get(n.id, 99.0), "register count")
    assert best is not None and best.node.id == 5 and best.tied == () and best.timed
    assert best.why == "the fastest correct kernel measured during the search"


def test_equal_measured_speedups_tie_too() -> None:
    tree = Tree()
    tree.add(0, Kind.large, "ok", 1.5, reward("ok", 1.5))
    tree.add(0, Kind.large, "ok", 1.5, reward("ok", 1.5))
    best = best_correct(tree.nodes())
    assert best is not None and best.node.id == 1 and best.tied == (2,)
    assert "tied with node(s) 2; node 1 is the first found" in best.why


def test_no_correct_kernel_has_no_best() -> None:
    tree = Tree()
    tree.add(0, Kind.large, "compile_error", None, 0.0)
    assert best_correct(tree.nodes()) is None and tree.best() is None


def test_select_reports_children_of_equal_score_and_the_tie_break_decides_between_them() -> None:
    tree = untimed_tree()
    # w = w_e = 0: no exploration bonus, so the expand option loses and the equal-reward children tie
    config = SearchConfig(exploration_weight=0.0, p_large=0.0)
    plain = select(tree, tree.root, config, random.Random(0))
    assert plain.trail[0].best_child == 2 and plain.trail[0].tied == (3, 4) and plain.node == 2
    keyed = select(tree, tree.root, config, random.Random(0), tie_break=lambda n: -float(n.id))
    assert keyed.trail[0].best_child == 4 and keyed.trail[0].tied == (2, 3) and keyed.node == 4


def test_the_reward_of_an_untimed_correct_kernel_says_so() -> None:
    note = untimed_note("ok", None)
    assert note is not None and note.startswith("untimed:") and "0.509" in note and "tie" in note
    assert untimed_note("ok", 1.3) is None and untimed_note("mismatch", None) is None


def test_the_search_reads_verdicts_as_status_values_and_as_the_store_keeps_them() -> None:
    for status in Status:
        assert correct(status) == correct(status.value) == (status is Status.ok)
        not_compiled = status in (Status.syntax_error, Status.compile_error)
        assert compiled(status) == compiled(status.value) == (not not_compiled)
    assert not compiled(None) and not correct(None)


def test_an_estimate_ranks_untimed_kernels_and_never_outranks_a_measurement() -> None:
    tree = Tree()
    tree.add(0, Kind.large, "ok", None, reward("ok", 1.2), estimated_speedup=1.2)
    tree.add(0, Kind.large, "ok", None, reward("ok", 2.4), estimated_speedup=2.4)
    tree.add(0, Kind.large, "ok", None, reward("ok", None))  # no estimate: speedup 1
    best = best_correct(tree.nodes())
    assert best is not None and best.node.id == 2 and best.estimated and not best.timed and best.tied == ()
    assert best.why.startswith("the fastest by its estimated speedup of 3 correct kernels")
    assert "not a measurement" in best.why
    assert tree.best() == best.node and tree.segment_best(2) == best.node
    # the reward of an estimated kernel comes from its estimate, as a measured one's from its measurement
    assert reward("ok", 2.4) > reward("ok", 1.2) > reward("ok", None) - 0.01
    note = untimed_note("ok", None, 10.0, 2.4, "H200")
    assert note is not None and "estimated speedup, 2.40x on an H200, not a measurement" in note
    tree.add(0, Kind.large, "ok", 0.8, reward("ok", 0.8))  # measured slower than either estimate: it wins
    measured = best_correct(tree.nodes())
    assert measured is not None and measured.node.id == 4 and measured.timed and not measured.estimated
