"""Events: what a worker tells the evaluator, and their union `Event` as the evaluator reads it."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from adaexplore.domain import (
    AuditFlag,
    Degeneracy,
    ErrorDetail,
    KernelCost,
    SizeValue,
    Stats,
    Status,
    Tolerance,
    TrialResult,
)
from adaexplore.executor.tasks._small_sizes import Attempt
from adaexplore.executor.wire._data import DeviceExchange, InputPattern, Msg, SharedInputs, TensorFile
from adaexplore.roofline import ForwardWork, TaskWork

__all__ = [
    "COMPILED",
    "COMPILING",
    "Compared",
    "Compiled",
    "Coverage",
    "CoverageGap",
    "Done",
    "Event",
    "Failed",
    "Loaded",
    "MemoryReport",
    "Phase",
    "Prepared",
    "Ready",
    "ReferenceTimed",
    "SizeTried",
    "Started",
    "Synthesized",
    "TargetCompiles",
    "TaskFailed",
    "Timed",
    "TrialsDone",
    "decode_event",
]


class Started(Msg):
    """Imports are done; a GPU worker waits for Warm before touching the device."""

    kind: Literal["started"] = "started"


class Ready(Msg):
    kind: Literal["ready"] = "ready"
    pid: int
    startup_s: float
    versions: dict[str, str | None]


# The phases a worker says as a kernel's compile starts (its name the detail) and ends: the compiler's time is not
# charged to the candidate's budget on the CPU backends.
COMPILING = "kernel_compile"
COMPILED = "kernel_compiled"


class Phase(Msg):
    kind: Literal["phase"] = "phase"
    phase: str
    detail: str = ""
    done: int | None = None
    total: int | None = None


class Failed(Msg):
    """The candidate's evaluation ended early with a verdict (never `ok`)."""

    kind: Literal["failed"] = "failed"
    status: Status
    message: str
    error: ErrorDetail | None = None
    flags: list[AuditFlag] = Field(default_factory=list)
    shared_memory: dict[str, int] = Field(default_factory=dict)
    static_cost: list[KernelCost] = Field(default_factory=list)


class TargetCompiles(Msg):
    """Launches of the candidate's kernels compiled for a GPU target on a machine without it (the compile check,
    and the interpreter, which compiles each launch it runs), and the task sizes they were compiled at."""

    target: str
    sizes: Literal["full", "small"]
    # the task's size names and the values assigned to them (small sizes); empty at full size
    size_values: dict[str, SizeValue] = Field(default_factory=dict)
    # distinct specializations (argument types, constexprs, options) compiled, per kernel
    specializations: dict[str, int] = Field(default_factory=dict)


class CoverageGap(Msg):
    """An output of the forward at the task's full sizes with elements no launch or operator wrote."""

    output: int  # its position among the forward's outputs
    shape: list[int]
    missing: int  # elements never written (or computed from elements never written)
    first: list[int]  # the index of the first and the last of them
    last: list[int]
    # the launches that wrote into its buffer ("_k over grid (1,)"), and how holes came into it from other buffers
    writers: list[str] = Field(default_factory=list)
    derived: list[str] = Field(default_factory=list)


class Coverage(Msg):
    """What the forward writes at the task's full sizes, followed on shape-only tensors
    (worker/coverage/_coverage.py)."""

    outputs: int  # outputs checked
    launches: int  # launches followed
    gaps: list[CoverageGap] = Field(default_factory=list)
    # what the check could not follow (taken as writing everywhere it might)
    notes: list[str] = Field(default_factory=list)
    seconds: float = 0.0
    # the check's own failure (then no gap is claimed): never the kernel's
    failed: str = ""


class Compiled(Msg):
    kind: Literal["compiled"] = "compiled"
    kernels: list[str]
    shared_memory: dict[str, int] = Field(default_factory=dict)
    static_cost: list[KernelCost] = Field(default_factory=list)
    flags: list[AuditFlag] = Field(default_factory=list)
    load_s: float
    compile_s: float
    target_compiles: TargetCompiles | None = None
    # what one forward does at the task's full sizes, where a pass ran there (None: none did)
    work: ForwardWork | None = None
    # whether that forward writes every element of its outputs (None: not followed)
    coverage: Coverage | None = None


class TrialsDone(Msg):
    kind: Literal["trials_done"] = "trials_done"
    outputs: list[list[TensorFile]]
    triton_launches: int
    triton_kernels: list[str]
    flags: list[AuditFlag] = Field(default_factory=list)
    trial_s: float
    # interpret: every launch the trials ran, compiled for the GPU target too
    target_compiles: TargetCompiles | None = None


class Timed(Msg):
    kind: Literal["timed"] = "timed"
    stats: Stats
    method: str
    host_bound_calls: int
    unseen_ms: float = 0.0
    rechecks: list[list[TensorFile]] = Field(default_factory=list)
    recheck_patterns: list[InputPattern | None] = Field(default_factory=list)
    # each recheck's number among the timed calls (from 0), and how many calls were timed
    recheck_calls: list[int] = Field(default_factory=list)
    timed_calls: int = 0
    triton_time_share: float | None = None
    flags: list[AuditFlag] = Field(default_factory=list)


class Prepared(Msg):
    kind: Literal["prepared"] = "prepared"
    init_seed: int
    trial_seeds: list[int]
    timing_seed: int
    tolerances: list[Tolerance]
    task_flags: list[AuditFlag] = Field(default_factory=list)
    # the task is degenerate (at full size where the judge could check it there, else at the sizes it runs)
    degeneracy: Degeneracy | None = None
    # the small sizes the judge runs make the task degenerate, though its full sizes do not
    small_degeneracy: Degeneracy | None = None
    degeneracy_checked: Literal["full", "small"] | None = None  # where that was decided
    reference_mutates_inputs: bool = False
    reference_aliases_inputs: bool = False
    # The most elements the reference's outputs hold together in any trial.
    output_elements: int | None = None
    # On a GPU: the buffer the candidate writes its outputs to (its handle is on the side socket).
    outputs: DeviceExchange | None = None


class Loaded(Msg):
    """The judge loaded a job. On a GPU, the inputs it drew, to share (their handle is on the side socket)."""

    kind: Literal["loaded"] = "loaded"
    inputs: SharedInputs | None = None
    # the reference was kept from an earlier job of the same task and seeds
    cached: bool = False
    # what the reference does at the task's full sizes (None: it could not be followed; `work_note` says why)
    work: TaskWork | None = None
    work_note: str = ""
    # the job's small sizes with those the outputs do not depend on (what dots reduce over) back at full size,
    # for a precision check at the task's full reduction lengths; None: no such size was made small
    reduction_sizes: dict[str, SizeValue] | None = None
    reduction_names: list[str] = Field(default_factory=list)
    # a reference built for this job: the seconds the judge spent drawing its inputs (or waiting for processes
    # drawing them side by side), and how many seeds such processes drew
    draw_s: float = 0.0
    drawn_in_processes: int = 0
    # why the judge drew seeds itself that processes were to draw, where the task's values were not the cause
    draw_note: str = ""


class MemoryReport(Msg):
    """The judge's memory: its cache of references against its budget, and the device's own counters. Also the
    judge's answer to a `Release`, so that the evaluator knows what the judge keeps after it."""

    kind: Literal["memory_report"] = "memory_report"
    judge: str
    budget_bytes: int
    cached_bytes: int
    entries: int
    allocated_bytes: int = 0
    reserved_bytes: int = 0
    free_bytes: int = 0
    total_bytes: int = 0
    # the references it keeps that no job uses (kept for a later job of their task and seeds, or built ahead)
    idle_bytes: int = 0
    # the task a query named: what its reference does at full size (None: it could not be followed, or no task)
    work: TaskWork | None = None
    work_note: str = ""


class Compared(Msg):
    kind: Literal["compared"] = "compared"
    results: list[TrialResult]


class ReferenceTimed(Msg):
    kind: Literal["reference_timed"] = "reference_timed"
    stats: Stats
    compile_stats: Stats | None = None
    # torch.compile of the reference failed (torch's fault or the reference's, never the candidate's)
    compile_error: str | None = None


class TaskFailed(Msg):
    """The task itself could not be used (its code raised); the caller's fault, not the candidate's."""

    kind: Literal["task_failed"] = "task_failed"
    message: str
    traceback: str = ""


class Done(Msg):
    kind: Literal["done"] = "done"


class Synthesized(Msg):
    """A task synthesis worker's reply; `error` says why a request could not be read (then `reply` is empty)."""

    kind: Literal["synthesized"] = "synthesized"
    reply: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None


class SizeTried(Msg):
    """One candidate as the size probe ran it; `Done` follows the last one of a request."""

    kind: Literal["size_tried"] = "size_tried"
    attempt: Attempt


Event = Annotated[
    Started
    | Ready
    | Phase
    | Failed
    | Compiled
    | TrialsDone
    | Timed
    | Prepared
    | Loaded
    | MemoryReport
    | Compared
    | ReferenceTimed
    | TaskFailed
    | Done
    | Synthesized
    | SizeTried,
    Field(discriminator="kind"),
]

_EVENTS: TypeAdapter[Event] = TypeAdapter(Event)


def decode_event(line: bytes) -> Event:
    return _EVENTS.validate_json(line)
