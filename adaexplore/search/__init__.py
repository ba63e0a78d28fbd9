"""The search: UCT with the expand option, small and large steps, working memory and pools (pure Python)."""

from adaexplore.search._best import SearchBest, TieBreak, best_correct, speed_key, tie_order, tie_phrase
from adaexplore.search._context import path_to_root, pool, working_memory
from adaexplore.search._nodes import NodeStats, compiled, correct
from adaexplore.search._reward import reward, untimed_note
from adaexplore.search._select import Decision, Selection, TreeView, choose_action, select
from adaexplore.search._tree import Tree
from adaexplore.search._uct import expand_score, q_value, uct_score

__all__ = [
    "Decision",
    "NodeStats",
    "SearchBest",
    "Selection",
    "TieBreak",
    "Tree",
    "TreeView",
    "best_correct",
    "choose_action",
    "compiled",
    "correct",
    "expand_score",
    "path_to_root",
    "pool",
    "q_value",
    "reward",
    "select",
    "speed_key",
    "tie_order",
    "tie_phrase",
    "uct_score",
    "untimed_note",
    "working_memory",
]
