"""Persistence: tasks, runs, nodes, evaluations and expansions (the only place with SQL), on SQLite or PostgreSQL."""

from adaexplore.store._agent import ModelCall, UsageTotals
from adaexplore.store._bench import BenchProblemRecord, BenchRecord, ProblemVerdict
from adaexplore.store._calibrations import TimedVerdict
from adaexplore.store._claims import ClaimRecord, ClaimSpec
from adaexplore.store._memory import FailureRecord, NewRule, RuleRecord, version_key
from adaexplore.store._nodes import NewEvaluation, StoreTreeView
from adaexplore.store._postgres import redact
from adaexplore.store._records import MAX_INTEGER, EvaluationRecord, ExpansionRecord, NodeRecord, RunRecord, TaskRecord
from adaexplore.store._schema import SCHEMA_VERSION
from adaexplore.store._store import Store, StoreCheck, check_store, open_store, store_exists

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
    "Store",
    "StoreCheck",
    "StoreTreeView",
    "TaskRecord",
    "TimedVerdict",
    "UsageTotals",
    "check_store",
    "open_store",
    "redact",
    "store_exists",
    "version_key",
]
