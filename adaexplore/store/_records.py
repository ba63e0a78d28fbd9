"""Rows of the store as typed records."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from adaexplore.domain import Degeneracy, Kind

__all__ = ["MAX_INTEGER", "EvaluationRecord", "ExpansionRecord", "NodeRecord", "RunRecord", "TaskRecord", "fits"]

MAX_INTEGER = 2**63 - 1  # SQLite's INTEGER: a larger Python int cannot even be bound as a parameter


def fits(value: int) -> bool:
    """Whether `value` can be an SQLite integer (an id beyond that range names nothing)."""
    return -MAX_INTEGER - 1 <= value <= MAX_INTEGER


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TaskRecord(_Record):
    id: str
    name: str
    source: str
    origin: str
    created_at: str
    # what the task's reference does at its full sizes (roofline.TaskWork as JSON), where it was recorded
    work: str | None = None
    # the task is degenerate (domain.Degeneracy as JSON; None: it is not, or it was not checked), and the sizes at
    # which the check decided: "full", "small", or None where no check said
    degenerate: str | None = None
    degeneracy_checked: str | None = None

    @property
    def degeneracy(self) -> Degeneracy | None:
        return Degeneracy.model_validate_json(self.degenerate) if self.degenerate else None


class RunRecord(_Record):
    id: str
    task_id: str
    config: str
    mode: str
    backend: str
    model: str
    seed: int
    status: str
    steps: int
    root_id: int
    best_node_id: int | None
    final_node_id: int | None
    final_result: str | None
    created_at: str
    updated_at: str
    # status 'running' (open for steps), 'stopped' (open, but whoever took its steps stopped, for this
    # reason) or 'finished'
    stop_reason: str | None = None
    with_compile: bool = False  # every evaluation also times torch.compile of the reference
    # the version of the run's brief last given to its client (start_run, expand_node)
    brief_version: str | None = None
    # the folder the offline generator (replay) served its kernels from (None: another generator)
    kernels: str | None = None


class EvaluationRecord(_Record):
    id: int
    task_id: str
    code_hash: str
    environment: str
    mode: str
    status: str
    speedup: float | None
    result: str
    created_at: str
    estimated_speedup: float | None = None
    # what the kernel launches at full size (roofline.ForwardWork as JSON), kept where a GPU timed it correct
    work: str | None = None


class NodeRecord(_Record):
    id: int
    run_id: str
    parent_id: int | None
    kind: Kind
    depth: int
    segment: int | None
    seq: int
    code: str
    code_hash: str
    context_ids: list[int]
    evaluation_id: int | None
    status: str | None
    speedup: float | None
    # where nothing timed it: its estimated speedup on the target GPU
    estimated_speedup: float | None = None
    reward: float | None
    visits: int
    total_reward: float
    max_reward: float
    small_children: int
    children: int
    created_at: str


class ExpansionRecord(_Record):
    id: int
    run_id: str
    node_id: int
    action: Kind
    context_ids: list[int]
    created_at: str
    children: list[int] = []  # the nodes made from it
