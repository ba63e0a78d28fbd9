"""What a candidate may take of one evaluation (`EvaluationOptions.candidate_budget_s`): a kernel that does not
return is a `timeout` within it.

- Where a client waits for the answer (an MCP call, `adaexplore profile` on the CPU backends at small sizes):
  `executor.call_budget_s`, on the CPU backends in CPU time and wall time both, so that the answer comes in time
  on a busy machine too.
- Where none waits (a headless explore's step, a bench's problem): `executor.protocol_budget_s`; unset, on a GPU
  each phase its own timeout (KernelBench's protocol), and on the CPU backends at small sizes the call's budget
  in CPU time alone, so that a busy machine does not change the verdict.

On the CPU backends the budget counts the candidate's own code, not the Triton compiler's time
(`executor/pipeline/stages/budget.py`)."""

from __future__ import annotations

from adaexplore.config import Settings
from adaexplore.executor import Task
from adaexplore.tools.tasks._task_sizes import checks_on_cpu

__all__ = ["protocol_budget"]


def protocol_budget(settings: Settings, evaluator: object, backend: str | None, task: Task) -> float | None:
    """The budget of an evaluation no client waits on."""
    executor = settings.executor
    if executor.protocol_budget_s is not None:
        return executor.protocol_budget_s
    if checks_on_cpu(evaluator, settings, backend) and task.small_sizes:
        return executor.call_budget_s
    return None
