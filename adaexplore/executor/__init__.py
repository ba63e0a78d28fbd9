"""The executor: tasks, isolated candidate workers, correctness, timing and audits (DESIGN §5)."""

from adaexplore.domain import (
    Audit,
    AuditFlag,
    Backend,
    Correctness,
    ErrorDetail,
    Evaluation,
    Mode,
    Provenance,
    Seeds,
    Stats,
    Status,
    Timing,
    Tolerance,
    TrialResult,
)
from adaexplore.executor._evaluator import Evaluator, Progress, ProgressUpdate
from adaexplore.executor._size_prober import SizeProber, derive_small_sizes
from adaexplore.executor.host._environment import Environment
from adaexplore.executor.tasks._small_sizes import Derivation, with_small_sizes
from adaexplore.executor.tasks._task import (
    Task,
    code_hash,
    load_task,
    model_view,
    module_assignment,
    read_task_file,
    task_from_source,
)
from adaexplore.executor.wire._modes import ModeSpec, TimingSpec, mode_spec, tolerance_for

__all__ = [
    "Audit",
    "AuditFlag",
    "Backend",
    "Correctness",
    "Derivation",
    "Environment",
    "ErrorDetail",
    "Evaluation",
    "Evaluator",
    "Mode",
    "ModeSpec",
    "Progress",
    "ProgressUpdate",
    "Provenance",
    "Seeds",
    "SizeProber",
    "Stats",
    "Status",
    "Task",
    "Timing",
    "TimingSpec",
    "Tolerance",
    "TrialResult",
    "code_hash",
    "derive_small_sizes",
    "load_task",
    "mode_spec",
    "model_view",
    "module_assignment",
    "read_task_file",
    "task_from_source",
    "tolerance_for",
    "with_small_sizes",
]
