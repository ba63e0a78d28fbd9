"""Requests and results of the tools: flat pydantic models, the contract the MCP server and the agent share."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from adaexplore.config import SearchConfig
from adaexplore.domain import SizeValue
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
    "StepAnswer",
    "StepKernel",
    "TrailStep",
]

Action = Literal["small", "large"]

# What the large objects of a result hold: the tool list describes them as objects (server/_schema.py)
_CONFIG = "the run's search settings: total_steps, p_large, small_step_limit, pool_size, …"
_EVALUATION = "the whole verdict: status, message, correctness, timing, audit (flags, static_cost), provenance, …"


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


# a size on the wire: integers stay integers (an int is tried first), and the schema says "number" once
_WireSize = Annotated[
    SizeValue, WithJsonSchema({"anyOf": [{"type": "number"}, {"type": "array", "items": {"type": "integer"}}]})
]


class CreateTaskRequest(_In):
    source: str | None = Field(default=None, description="the task module's text (KernelBench format)")
    path: str | None = Field(default=None, description="or a path to the task file on the server's machine")
    flashinfer_definition: str | None = Field(
        default=None, description="or a FlashInfer-Bench Definition JSON file on the server's machine"
    )
    flashinfer_workloads: list[str] | None = Field(
        default=None, description="its workload files or folders (default: its trace set's workloads/)"
    )
    name: str | None = Field(default=None, description="a short name (default: the file name, or 'task')")
    small_sizes: dict[str, _WireSize] | None = Field(
        default=None,
        description="sizes for CPU checks by name (a number or a list of integers) instead of SMALL_SIZES; {}: "
        "full sizes; default: derived",
    )


class CreateTaskResult(_Out):
    task_id: str
    name: str = Field(description="the first name the same task was given")
    init_params: list[str]
    forward_params: list[str]
    small_sizes: bool
    small_sizes_note: str = Field(default="", description="where the small sizes came from, or why none")
    input_sets: list[str] = Field(default_factory=list, description="sets a kernel is judged on (at full size)")
    speed_of_light: str = Field(default="", description="least time on the target GPU, and why")
    speed_of_light_ms: float | None = None  # that time, ms
    degenerate: str | None = None  # where the task is degenerate, the one line that says so


class StartRunRequest(_In):
    task_id: str
    seed: int | None = Field(default=None, ge=0, le=MAX_INTEGER, description="the run's random seed (default: drawn)")
    total_steps: int | None = Field(default=None, ge=1, description="evaluations in the run (default: settings)")
    preset: Literal["default", "paper"] | None = Field(default=None, description="'paper': the authors' behaviour")
    mode: Literal["strict", "kernelbench", "paper", "flashinfer"] | None = None
    backend: Literal["auto", "cuda", "compile", "interpret"] | None = None
    model: str = Field(default="external", description="who writes the kernels, for the record")
    with_compile: bool = Field(default=False, description="also time torch.compile of the reference, every step")


class StartRunResult(_Out):
    run_id: str
    task_id: str
    root_node_id: int
    seed: int
    config: SearchConfig = Field(description=_CONFIG)
    brief: str = Field(description="what every step shares: the task, its tolerance, the rules, the skill memory")
    brief_version: str


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
    brief: str = Field(description="the run's brief: the task, its precision, the rules and the skill memory")
    brief_version: str
    instructions: str = Field(description="the whole prompt for this step: rules, task, kernels and what to answer")
    step_instructions: str = Field(description="the step's own instructions, which cite the brief")


class StepKernel(_Out):
    """A kernel of a step's context by id and status: the instructions hold its step, its verdict (with its speed)
    and the code they use; its code is the resource node://{node_id}/code, and get_node gives the rest."""

    node_id: int
    status: str | None

    @classmethod
    def of(cls, kernel: ContextKernel) -> StepKernel:
        return cls(node_id=kernel.node_id, status=kernel.status)


class StepAnswer(_Out):
    """expand_node's answer to an MCP client: each text once. The task, the kernel to edit, the pool's kernels,
    every kernel's verdict and the skill memory's rules are all in `instructions`; the kernels are listed beside
    them by id and status only."""

    expansion_id: int
    run_id: str
    node_id: int
    action: Action
    current: StepKernel | None = Field(description="the kernel to edit (small step)")
    working_memory: list[StepKernel] = Field(description="earlier nodes of this line, oldest first (small step)")
    pool: list[StepKernel] = Field(description="the best kernel of each line (large step); code in the instructions")
    brief_version: str = Field(description="the run brief's version that applies")
    instructions: str = Field(description="the step's prompt (after the brief if that is new to the run)")

    @classmethod
    def of(cls, result: ExpandNodeResult, instructions: str) -> StepAnswer:
        return cls(
            expansion_id=result.expansion_id,
            run_id=result.run_id,
            node_id=result.node_id,
            action=result.action,
            current=StepKernel.of(result.current) if result.current is not None else None,
            working_memory=[StepKernel.of(k) for k in result.working_memory],
            pool=[StepKernel.of(k) for k in result.pool],
            brief_version=result.brief_version,
            instructions=instructions,
        )


class CompileAndProfileRequest(_In):
    code: str
    expansion_id: int | None = Field(default=None, description="from expand_node: adds the result to the tree")
    run_id: str | None = None
    parent_id: int | None = None
    action: Action | None = None
    task_id: str | None = Field(default=None, description="evaluate only, adding nothing to a tree")
    mode: Literal["strict", "kernelbench", "paper", "flashinfer"] | None = None
    backend: Literal["auto", "cuda", "compile", "interpret"] | None = None


class CompileAndProfileResult(_Out):
    status: str
    message: str
    speedup: float | None
    timed: bool
    estimated_speedup: float | None = Field(
        default=None,
        description="untimed: estimated on the target GPU, not measured",
    )
    sol_fraction: float | None = Field(
        default=None,
        description="timed: share of the speed of light",
    )
    node_id: int | None = Field(description="the new node, when the result was added to a run")
    reward: float | None
    is_new_best: bool
    best_node_id: int | None
    reused_evaluation: bool = Field(description="identical code was evaluated before; its result was reused")
    evaluation: Evaluation = Field(description=_EVALUATION)


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
    estimated_speedup: float | None = None
    sol_fraction: float | None = None
    reward: float | None
    visits: int
    mean_reward: float
    max_reward: float
    children: int
    context_node_ids: list[int]
    code: str | None
    evaluation: Evaluation | None = Field(description=_EVALUATION)


class GetRunRequest(_In):
    run_id: str


class RunResult(_Out):
    run_id: str
    task_id: str
    task_name: str
    status: str = Field(description="running, stopped (see stop_reason; the next step reopens it) or finished")
    stop_reason: str | None = None
    model: str
    mode: str = Field(description="its kernels' protocol: strict, kernelbench or paper")
    backend: str = Field(description="auto, cuda, compile or interpret")
    seed: int
    steps_done: int
    steps_total: int
    nodes: int
    counts: dict[str, int]
    max_depth: int
    best_node_id: int | None = Field(description="as best_kernel names it")
    best_speedup: float | None
    best_estimated_speedup: float | None = None
    best_why: str = Field(default="", description="the rule that chose it")
    final_node_id: int | None
    config: SearchConfig = Field(description=_CONFIG)
    created_at: str
    updated_at: str


class BestKernelRequest(_In):
    run_id: str


class BestKernelResult(_Out):
    run_id: str
    node_id: int
    speedup: float | None
    verified: bool = Field(description="chosen on fresh re-measurements at the end of the run (finish_run)")
    measured: Literal["re-measured", "search-time", "estimated", "untimed"] = Field(
        description="where speedup comes from: finish_run's fresh re-measurement, the search, an estimate "
        "(estimated_speedup), or nothing"
    )
    estimated_speedup: float | None = None
    tied_node_ids: list[int] = Field(description="correct kernels of the same speed that were not chosen")
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
