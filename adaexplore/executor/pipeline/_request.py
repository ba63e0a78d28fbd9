"""The one seam of "evaluate this code on this task": the options every evaluator takes (the local one, the
cluster's, a test's fake) and the protocol they all implement, so that no caller restates a list of keywords."""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from adaexplore.domain import Degeneracy, Evaluation, Mode
from adaexplore.executor.pipeline.stages.context import Progress
from adaexplore.executor.tasks._task import Task
from adaexplore.roofline import GpuCalibration, TaskWork

__all__ = ["EvaluationOptions", "EvaluatorProtocol", "TaskCheck"]


class TaskCheck(BaseModel):
    """What checking a task before any candidate found: what its reference does at full size (None where it could
    not be followed on shape-only tensors), whether the task is degenerate (at its full sizes where the judge could
    check it there, else at the sizes it runs: `Degeneracy.sizes` says which), and whether its small sizes make it
    degenerate though its full sizes do not."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    work: TaskWork | None = None
    degeneracy: Degeneracy | None = None
    small_degeneracy: Degeneracy | None = None
    # the sizes at which the judge decided whether the task is degenerate: "full" or "small" (None: not checked)
    checked: Literal["full", "small"] | None = None


class EvaluationOptions(BaseModel):
    """How to evaluate a candidate, beyond its task and its code. The defaults are the settings'."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # the evaluation protocol; None: `executor.mode`
    mode: Mode | None = None
    # "cuda", "compile" or "interpret"; None or "auto": this machine's default (`executor.backend`)
    backend: str | None = None
    # time torch.compile of the reference too
    with_compile: bool = False
    # time the reference again instead of reading its cached timing
    fresh_reference: bool = False
    # new seeds for the weights, inputs and timing even where the mode's protocol fixes them (strict always)
    fresh_seeds: bool = False
    # the most time spent waiting on the candidate over all its phases; None: each phase its own timeout. On the
    # CPU backends it is the CPU time of the candidate's own code (the Triton compiler's not counted) and, with
    # `candidate_budget_wall`, its wall time too: set where a client waits for the answer, unset where none does
    # (a headless search, a bench), so that a busy machine does not change the verdict
    candidate_budget_s: float | None = Field(default=None, gt=0)
    candidate_budget_wall: bool = True
    # the calibrations this store's GPU verdicts fitted (`adaexplore calibrate`): an estimate for one of their GPU
    # models uses that model's efficiencies instead of the package's
    calibrations: list[GpuCalibration] = Field(default_factory=list)


class EvaluatorProtocol(Protocol):
    """What every evaluator does: the local `Evaluator`, the cluster's, and a test's fake."""

    async def evaluate(
        self, task: Task, code: str, options: EvaluationOptions | None = None, *, progress: Progress | None = None
    ) -> Evaluation:
        """The verdict of `code` (a module defining ModelNew) on `task`; a failing candidate is a verdict."""
        ...

    async def check_task(self, task: Task, options: EvaluationOptions | None = None) -> TaskCheck:
        """Load the task as an evaluation under `options` (its mode) would; what its reference does at full size,
        where it could be followed, and whether the task is degenerate."""
        ...

    async def ready(self, progress: Progress | None = None) -> None:
        """Wait until it has started (it may start in the background); raises why it could not."""
        ...

    def fingerprint(self) -> str:
        """The environment fingerprint its verdicts carry."""
        ...
