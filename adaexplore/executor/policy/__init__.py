"""The static policy: what a candidate's source may say, checked without importing it (DESIGN §5).

A room of its own at the executor's floor: pure Python over the syntax tree, read by the caller (the static
stage) and by the worker (the import hook and the run-time guard of trusted roots). It imports nothing of the
executor. `_check` is the entry point; the tables are in `_tables` and `_tables_attrs`, the lookups over them
in `_rules`, the checks against real objects in `_reach`, the syntax-tree helpers in `_facts`, what a task grants
its candidates in `_grants`, where the candidate's classes go as values in `_class_flow`, and the
checker itself, one layer per module, in `_base`, `_detour`, `_visit_exprs` and `_visit_stmts`.
"""

from adaexplore.executor.policy._check import (
    ALLOWED_IMPORTS,
    NO_GRANTS,
    TaskGrants,
    Violation,
    attribute_refused,
    banned_name,
    check_policy,
    defines_model_new,
    guard_own_roots,
    needs_owner,
    resolve_dotted,
    task_grants,
)

__all__ = [
    "ALLOWED_IMPORTS",
    "NO_GRANTS",
    "TaskGrants",
    "Violation",
    "attribute_refused",
    "banned_name",
    "check_policy",
    "defines_model_new",
    "guard_own_roots",
    "needs_owner",
    "resolve_dotted",
    "task_grants",
]
