"""Invariants of the search under random trees (hypothesis)."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from adaexplore.config import SearchConfig
from adaexplore.domain import Kind
from adaexplore.search import Tree, path_to_root, pool, reward, select, working_memory

outcome = st.one_of(
    st.just(("compile_error", None)),
    st.just(("mismatch", None)),
    st.tuples(st.just("ok"), st.floats(min_value=0.05, max_value=30.0)),
)
configs = st.builds(
    SearchConfig,
    p_large=st.floats(min_value=0.0, max_value=1.0),
    small_step_limit=st.integers(min_value=0, max_value=3),
    pool_size=st.integers(min_value=0, max_value=4),
    pool_extra_max=st.integers(min_value=0, max_value=3),
    pool_other_branches=st.booleans(),
    reward_alpha=st.floats(min_value=0.0, max_value=1.0),
    exploration_weight=st.floats(min_value=0.0, max_value=2.0),
    reward_cap=st.one_of(st.none(), st.just(10.0)),
)


def grow(config: SearchConfig, outcomes: list[tuple[str, float | None]], seed: int):  # type: ignore[no-untyped-def]
    """Grow a tree, yielding it (and the max rewards before the step) after every step."""
    tree, rng = Tree(), random.Random(seed)
    for status, speedup in outcomes:
        before = {n.id: n.max_reward for n in tree.nodes()}
        chosen = select(tree, tree.root, config, rng)
        tree.add(chosen.node, chosen.action, status, speedup, reward(status, speedup, config.reward_cap))
        yield tree, before, rng


@settings(max_examples=150, deadline=None)
@given(config=configs, outcomes=st.lists(outcome, min_size=1, max_size=60), seed=st.integers(0, 2**16))
def test_search_invariants(config: SearchConfig, outcomes: list, seed: int) -> None:
    for tree, before, rng in grow(config, outcomes, seed):
        for node in tree.nodes():
            own = 0 if node.kind is Kind.root else 1
            assert node.visits == own + sum(c.visits for c in tree.children(node.id))
            if node.id in before:
                assert node.max_reward >= before[node.id]
            if node.kind is not Kind.root:
                memory = working_memory(tree, node.id, config.memory_rounds)
                assert memory and memory[-1].id == node.id and len(memory) <= config.memory_rounds
                assert len({m.segment for m in memory}) == 1
                assert all(m.kind is Kind.small for m in memory[1:])
            representatives = pool(tree, node.id, config, rng)
            assert len({r.segment for r in representatives}) == len(representatives)
            assert all(r.correct for r in representatives)
            assert len(representatives) <= config.pool_size
            if config.pool_other_branches:
                # the pool is as full as the run allows, and the other branches it shows are their fastest
                bests = tree.segment_bests()
                assert len(representatives) == min(config.pool_size, len(bests))
                on_path = {n.id for n in path_to_root(tree, node.id) if n.kind is Kind.large}
                shown = [r for r in representatives if r.segment not in on_path]
                left = [b for b in bests if b.segment not in on_path and b not in shown]
                assert all(s.rank_speed >= b.rank_speed for s in shown for b in left)
        best = tree.best()
        assert best is None or best.correct
        if best is not None:
            assert all(best.score >= n.score for n in tree.nodes() if n.correct)


@settings(max_examples=60, deadline=None)
@given(outcomes=st.lists(outcome, min_size=1, max_size=40), seed=st.integers(0, 2**16))
def test_the_root_takes_only_large_steps_and_small_children_respect_the_limit(outcomes: list, seed: int) -> None:
    config = SearchConfig(small_step_limit=2)
    for tree, _, _ in grow(config, outcomes, seed):
        assert all(c.kind is Kind.large for c in tree.children(tree.root))
        assert all(n.small_children <= config.small_step_limit for n in tree.nodes())
