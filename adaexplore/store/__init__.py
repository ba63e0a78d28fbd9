"""Persistence: tasks, runs, nodes, evaluations and expansions (the only place with SQL)."""

from adaexplore.store._agent import ModelCall, UsageTotals
from adaexplore.store._bench import BenchProblemRecord, BenchRecord, ProblemVerdict
from adaexplore.store._claims import ClaimRecord, ClaimSpec
from adaexplore.store._memory import FailureRecord, NewRule, RuleRecord, version_key
from adaexplore.store._records import MAX_INTEGER, EvaluationRecord, ExpansionRecord, NodeRecord, RunRecord, TaskRecord
from adaexplore.store._schema import SCHEMA_VERSION
from adaexplore.store._sqlite import NewEvaluation, SqliteStore, SqliteTreeView, open_store, store_exists

Store = SqliteStore

__all__ = [
    "MAX_INTEGER",
    "SCHEMA_VERSION",
    "BenchProblemRecord",
    "BenchRecord",
    "ClaimRecord",
    "ClaimSpec",
    "EvaluationRecord",
    "ExpansionRecord",
    "FailureRecord",
    "ModelCall",
    "NewEvaluation",
    "NewRule",
    "NodeRecord",
    "ProblemVerdict",
    "RuleRecord",
    "RunRecord",
    "SqliteStore",
    "SqliteTreeView",
    "Store",
    "TaskRecord",
    "UsageTotals",
    "open_store",
    "store_exists",
    "version_key",
]
