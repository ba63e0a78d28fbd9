"""Tasks: a reference module read and checked (`_task`), and the small sizes the CPU backends run it at
(`_small_sizes`). A room at the executor's floor, below the wire: it imports nothing of the executor."""

from adaexplore.executor.tasks._small_sizes import (
    BATCH_NAME,
    BUDGET_S,
    Attempt,
    Candidate,
    Derivation,
    candidates,
    module_sizes,
    sequence_sizes,
    with_small_sizes,
)
from adaexplore.executor.tasks._task import (
    Task,
    code_hash,
    load_task,
    model_view,
    module_assignment,
    read_task_file,
    task_from_source,
)

__all__ = [
    "BATCH_NAME",
    "BUDGET_S",
    "Attempt",
    "Candidate",
    "Derivation",
    "Task",
    "candidates",
    "code_hash",
    "load_task",
    "model_view",
    "module_assignment",
    "module_sizes",
    "read_task_file",
    "sequence_sizes",
    "task_from_source",
    "with_small_sizes",
]
