"""The executor: tasks, isolated candidate workers, correctness, timing and audits (DESIGN §5).

Its face loads each room on first use. Every worker process imports `adaexplore.executor.worker`, and with it this
module, at its start: importing the evaluator's pipeline there as well would cost each start about 0.12 s of CPU
(7 % of an interpreter worker's start) for code a worker never runs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from adaexplore.domain import (
        Audit,
        AuditFlag,
        Backend,
        Correctness,
        Degeneracy,
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
    from adaexplore.executor.host import SandboxPlan, detect_sandbox
    from adaexplore.executor.host._environment import Environment, gpu_device_present, probe_environment
    from adaexplore.executor.host._workspace import worker_env
    from adaexplore.executor.pipeline import (
        EvaluationOptions,
        Evaluator,
        EvaluatorProtocol,
        Progress,
        ProgressUpdate,
        TaskCheck,
        calibration_for,
        describe_sol,
        render_evaluation,
        sol_for,
        target_gpu,
    )
    from adaexplore.executor.probes import (
        SizeProber,
        SynthesisReport,
        SyntheticTask,
        derive_small_sizes,
        synthesize_tasks,
    )
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

# the module that defines each name of the face: the imports above for type checkers, at run time this table
# (tests/executor/test_face.py keeps the two and __all__ equal)
_ROOMS: dict[str, tuple[str, ...]] = {
    "adaexplore.domain": (
        "Audit",
        "AuditFlag",
        "Backend",
        "Correctness",
        "Degeneracy",
        "ErrorDetail",
        "Evaluation",
        "Mode",
        "Provenance",
        "Seeds",
        "Stats",
        "Status",
        "Timing",
        "Tolerance",
        "TrialResult",
    ),
    "adaexplore.executor.host": (
        "SandboxPlan",
        "detect_sandbox",
    ),
    "adaexplore.executor.host._environment": (
        "Environment",
        "gpu_device_present",
        "probe_environment",
    ),
    "adaexplore.executor.host._workspace": ("worker_env",),
    "adaexplore.executor.pipeline": (
        "EvaluationOptions",
        "Evaluator",
        "EvaluatorProtocol",
        "Progress",
        "ProgressUpdate",
        "TaskCheck",
        "calibration_for",
        "describe_sol",
        "render_evaluation",
        "sol_for",
        "target_gpu",
    ),
    "adaexplore.executor.probes": (
        "SizeProber",
        "SynthesisReport",
        "SyntheticTask",
        "derive_small_sizes",
        "synthesize_tasks",
    ),
    "adaexplore.executor.tasks._small_sizes": (
        "Derivation",
        "with_small_sizes",
    ),
    "adaexplore.executor.tasks._task": (
        "Task",
        "code_hash",
        "load_task",
        "model_view",
        "module_assignment",
        "read_task_file",
        "task_from_source",
    ),
    "adaexplore.executor.wire._modes": (
        "ModeSpec",
        "TimingSpec",
        "mode_spec",
        "tolerance_for",
    ),
}
_WHERE = {name: module for module, names in _ROOMS.items() for name in names}

__all__ = [
    "Audit",
    "AuditFlag",
    "Backend",
    "Correctness",
    "Degeneracy",
    "Derivation",
    "Environment",
    "ErrorDetail",
    "Evaluation",
    "EvaluationOptions",
    "Evaluator",
    "EvaluatorProtocol",
    "Mode",
    "ModeSpec",
    "Progress",
    "ProgressUpdate",
    "Provenance",
    "SandboxPlan",
    "Seeds",
    "SizeProber",
    "Stats",
    "Status",
    "SynthesisReport",
    "SyntheticTask",
    "Task",
    "TaskCheck",
    "Timing",
    "TimingSpec",
    "Tolerance",
    "TrialResult",
    "calibration_for",
    "code_hash",
    "derive_small_sizes",
    "describe_sol",
    "detect_sandbox",
    "gpu_device_present",
    "load_task",
    "mode_spec",
    "model_view",
    "module_assignment",
    "probe_environment",
    "read_task_file",
    "render_evaluation",
    "sol_for",
    "synthesize_tasks",
    "target_gpu",
    "task_from_source",
    "tolerance_for",
    "with_small_sizes",
    "worker_env",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
