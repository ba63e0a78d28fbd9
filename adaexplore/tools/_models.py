"""Requests and results of the tools: flat pydantic models, the contract the MCP server and the agent share."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from adaexplore.config import SearchConfig
from adaexplore.executor import Evaluation
from adaexplore.store import MAX_INTEGER

__all__ = [
    "BestKernelRequest",
    "BestKernelResult",
    "CompileAndProfileRequest",
    "CompileAndProfileResult",
    "ContextKernel",
    "CreateTaskRequest",
    "CreateTaskResult",
    "ExpandNodeRequest",
    "ExpandNodeResult",
    "FinishRunRequest",
    "FinishRunResult",
    "GetNodeRequest",
    "GetRunRequest",
    "NodeResult",
    "ReevaluatedCandidate",
    "RunResult",
    "SelectUctRequest",
    "SelectUctResult",
    "StartRunRequest",
    "StartRunResult",
    "TrailStep",
]

Action = Literal["small", "large"]


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CreateTaskRequest(_In):
    source: str | None = Field(default=None, description="the task module's text (KernelBench format)")
    path: str | None = Field(default=None, description="or a path to the task file on the server's machine")
    name: str | None = Field(default=None, description="a short name (default: the file name, or 'task')")


class CreateTaskResult(_Out):
    task_id: str
    name: str = Field(description="the task's name in the store: the first name the same task was given")
    init_params: list[str]
    forward_params: list[str]
    small_sizes: bool


class StartRunRequest(_In):
    task_id: str
    seed: int | None = Field(default=None, ge=0, le=MAX_INTEGER, description="the run's random seed (default: drawn)")
    total_steps: int | None = Field(default=None, ge=1, description="evaluations in the run (default: settings)")
    preset: Literal["default", "paper"] | None = Field(default=None, description="'paper': the authors' behaviour")
    mode: Literal["strict", "kernelbench", "paper"] | None = None
    backend: Literal["auto", "cuda", "compile", "interpret"] | None = None
    model: str = Field(default="external", description="who writes the kernels, for the record")
    with_compile: bool = Field(default=False, description="also time torch.compile of the reference, every step")


class StartRunResult(_Out):
    run_id: str
    task_id: str
    root_node_id: int
    seed: int
    config: SearchConfig


class TrailStep(_Out):
    node_id: int
    expand_score: float | None
    best_child_id: int | None
    best_child_score: float | None
    expanded: bool


class SelectUctResult(_Out):
    run_id: str
    node_id: int
    action: Action
    reason: str
    trail: list[TrailStep]
    steps_done: int
    steps_total: int


class SelectUctRequest(_In):
    run_id: str


class ExpandNodeRequest(_In):
    run_id: str
    node_id: int
    action: Action


class ContextKernel(_Out):
    node_id: int
    kind: str
    status: str | None
    speedup: float | None
    verdict: str
    code: str


class ExpandNodeResult(_Out):
    expansion_id: int
    run_id: str
    node_id: int
    action: Action
    task_source: str
    current: ContextKernel | None = Field(description="the kernel to edit (small step)")
    working_memory: list[ContextKernel] = Field(
        description="the segment's recent nodes before the current one, oldest first (small step)"
    )
    pool: list[ContextKernel] = Field(description="one best kernel per segment on the path (large step)")
    skill_memory: str = Field(
        description="the rules learned from earlier failures (get_skill_memory's prompt block), also at the head "
        "of the instructions; empty when none is injected"
    )
    instructions: str = Field(description="the whole prompt for this step: rules, task, kernels and what to answer")


class CompileAndProfileRequest(_In):
    code: str
    expansion_id: int | None = Field(default=None, description="from expand_node: adds the result to the tree")
    run_id: str | None = None
    parent_id: int | None = None
    action: Action | None = None
    task_id: str | None = Field(default=None, description="evaluate only, adding nothing to a tree")
    mode: Literal["strict", "kernelbench", "paper"] | None = None
    backend: Literal["auto", "cuda", "compile", "interpret"] | None = None


class CompileAndProfileResult(_Out):
    status: str
    message: str
    speedup: float | None
    timed: bool
    node_id: int | None = Field(description="the new node, when the result was added to a run")
    reward: float | None
    is_new_best: bool
    best_node_id: int | None
    reused_evaluation: bool = Field(description="identical code was evaluated before; its result was reused")
    evaluation: Evaluation


class GetNodeRequest(_In):
    node_id: int
    include_code: bool = True


class NodeResult(_Out):
    node_id: int
    run_id: str
    parent_id: int | None
    kind: str
    depth: int
    segment: int | None
    step: int
    status: str | None
    speedup: float | None
    reward: float | None
    visits: int
    mean_reward: float
    max_reward: float
    children: int
    context_node_ids: list[int]
    code: str | None
    evaluation: Evaluation | None


class GetRunRequest(_In):
    run_id: str


class RunResult(_Out):
    run_id: str
    task_id: str
    task_name: str
    status: str = Field(
        description="running (open for steps), stopped (open; whoever took its steps stopped, see stop_reason; "
        "the next step opens it again) or finished"
    )
    stop_reason: str | None = None
    model: str
    mode: str = Field(description="the evaluation protocol of the run's kernels: strict, kernelbench or paper")
    backend: str = Field(description="where its kernels run: auto, cuda, compile or interpret")
    seed: int
    steps_done: int
    steps_total: int
    nodes: int
    counts: dict[str, int]
    max_depth: int
    best_node_id: int | None
    best_speedup: float | None
    final_node_id: int | None
    config: SearchConfig
    created_at: str
    updated_at: str


class BestKernelRequest(_In):
    run_id: str


class BestKernelResult(_Out):
    run_id: str
    node_id: int
    speedup: float | None
    verified: bool = Field(description="chosen on fresh re-measurements at the end of the run (finish_run)")
    code: str
    message: str


class FinishRunRequest(_In):
    run_id: str


class ReevaluatedCandidate(_Out):
    node_id: int
    search_speedup: float | None
    status: str
    speedup: float | None


class FinishRunResult(_Out):
    run_id: str
    final_node_id: int | None
    candidates: list[ReevaluatedCandidate]
    message: str
