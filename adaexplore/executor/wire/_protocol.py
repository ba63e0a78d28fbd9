"""Messages between the evaluator and its worker processes: one JSON object per line.

Only plain data crosses a process boundary. On a CPU, tensors travel as raw files in the job's exchange
directory and are named here by `TensorFile`; nothing is ever unpickled. On a GPU they stay in device
memory: the judge exports a buffer of its own (`DeviceExchange`), whose handle travels beside the message
that describes it, as a file descriptor on the worker's side socket.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from adaexplore.domain import (
    AuditFlag,
    ErrorDetail,
    KernelCost,
    Mode,
    Stats,
    Status,
    Tolerance,
    TrialResult,
)
from adaexplore.executor.tasks._small_sizes import Attempt, Candidate
from adaexplore.executor.wire._modes import TimingSpec
from adaexplore.roofline import ForwardWork, TaskWork

__all__ = [
    "Command",
    "Event",
    "InputPattern",
    "JobSpec",
    "TargetCompiles",
    "TensorFile",
    "decode_command",
    "decode_event",
    "encode",
]


class _Msg(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TensorFile(_Msg):
    """A tensor written as raw contiguous bytes to `path` (relative to the exchange directory), or, with an
    empty path, copied into its place in the job's device exchange."""

    path: str = ""
    shape: list[int]
    dtype: str
    device: str


class TensorSlot(_Msg):
    """Where one tensor lies in a device exchange buffer: `offset` bytes in, contiguous."""

    offset: int
    shape: list[int]
    dtype: str


class DeviceExchange(_Msg):
    """A buffer of the judge's GPU memory that a candidate worker maps. `sets` lays out the outputs of the
    calls it holds (per call, per output tensor)."""

    nbytes: int
    sets: list[list[TensorSlot]] = Field(default_factory=list)


class SharedArg(_Msg):
    """One argument of get_inputs(): a tensor in the shared inputs buffer, or a plain value."""

    tensor: TensorSlot | None = None
    value: int | float | bool | str | None = None


class SharedInputs(_Msg):
    """The inputs the judge drew, in a buffer the candidate maps read-only and copies from: one list of
    arguments per trial seed, and the timing seed's."""

    nbytes: int
    trials: list[list[SharedArg]]
    timing: list[SharedArg]


class InputPattern(_Msg):
    """The inputs of one timed call, told by how they were made from the timing seed's inputs: each
    floating tensor times factors read from a pool that `key` seeds, starting at its offset
    (worker/_perturb.py). The judge rebuilds the same inputs from it to recheck that call's outputs."""

    key: int
    offsets: list[int]
    # per floating tensor: symmetric in its last two dims, so scaled as D·X·D (it stays symmetric)
    congruent: list[bool]
    # per floating tensor: 1 (-1) sorted ascending (descending) along its last dim, so sorted again after
    # scaling; 0 otherwise. Empty: none is.
    order: list[int] = []
    # set for a task with integer inputs: the call's inputs are get_inputs() drawn anew under this seed
    seed: int | None = None


class JobSpec(_Msg):
    """What both the judge and a candidate worker need to know about one evaluation."""

    job_id: str
    task_path: str
    exchange_dir: str
    sizes: Literal["full", "small"]
    small_sizes: dict[str, int | float] | None = None
    mode: Mode
    init_seed: int | None = None  # None: the mode's fixed seed and derived trial seeds
    trial_seeds: list[int] | None = None
    timing_seed: int | None = None
    trials: int
    cast_floats_to: str | None = None
    allow_tf32_matmul: bool = False
    allow_tf32_cudnn: bool = False
    allowed_precision: str | None = None
    # the task's own TOLERANCE ({"atol", "rtol"}), which mode flashinfer holds outputs to
    task_tolerance: dict[str, float] | None = None
    # Call get_inputs, get_init_inputs and the model constructors with the (CUDA) device as default device.
    generate_on_device: bool = False
    # Check the candidate's names against the real modules before importing it (the policy's second half).
    enforce_policy: bool = True
    # The worker's checks that the candidate left the process as it found it (off only in the sandbox tests).
    runtime_guard: bool = True
    # On a GPU: inputs and outputs pass between the judge and the candidate's worker in device memory.
    device_exchange: bool = False
    # the interpreter runs only the first config of an autotuned kernel (a check at larger sizes, where running
    # every config once would multiply its cost)
    one_config: bool = False


# ---- commands: evaluator -> worker ---------------------------------------------------------------


class RunCandidate(_Msg):
    kind: Literal["run"] = "run"
    job: JobSpec
    candidate_path: str
    # cuda: compile every kernel once before the GPU is taken, so compiling overlaps other timing.
    compile_pass: bool = False
    shared_memory_limit: int = 232448
    require_triton: bool = True
    # Wait for an `Inputs` command after building the model, instead of drawing get_inputs() here.
    shared_inputs: bool = False


class Inputs(_Msg):
    """The judge's inputs for this job (their buffer's handle is on the side socket), or None: draw them."""

    kind: Literal["inputs"] = "inputs"
    shared: SharedInputs | None = None


class Proceed(_Msg):
    kind: Literal["proceed"] = "proceed"
    # Set when the task's own reference does the same, so the candidate may too.
    allow_input_mutation: bool = False
    allow_aliasing: bool = False
    # Outputs holding more elements than the reference's are refused before they are written anywhere: a
    # broadcast view of a huge shape costs the candidate nothing and the evaluator its memory.
    max_output_elements: int | None = None
    # On a GPU: where outputs go (the buffer's handle is on the side socket). None: raw files.
    outputs: DeviceExchange | None = None


class TimeCandidate(_Msg):
    kind: Literal["time"] = "time"
    timing: TimingSpec
    budget_ms: float
    min_reps: int
    max_reps: int
    # How many timed calls' outputs to keep for the judge, chosen as the calls return (worker/_timing.Sampler)
    recheck_calls: int = 0
    # the most bytes those kept outputs may take together
    recheck_bytes: int = 1 << 32


class Stop(_Msg):
    kind: Literal["stop"] = "stop"


class Warm(_Msg):
    """Run the GPU part of start-up now (the evaluator holds the device, so no timing is disturbed)."""

    kind: Literal["warm"] = "warm"


class Load(_Msg):
    """Import the task, build the reference model and the trial inputs (host work, before the device is held)."""

    kind: Literal["load"] = "load"
    job: JobSpec


class Prepare(_Msg):
    """Compute the reference outputs of a loaded job (device work)."""

    kind: Literal["prepare"] = "prepare"
    job_id: str
    # device exchange: how many calls' outputs its buffer holds at once (at least the trials)
    output_sets: int = 0
    # ... within this many bytes beyond the trials' own
    output_bytes: int = 1 << 32


class Compare(_Msg):
    kind: Literal["compare"] = "compare"
    job_id: str
    outputs: list[list[TensorFile]]
    # For outputs of timed calls: how each call's inputs were made (None for correctness trials).
    # (None for a call that had the timing inputs themselves: a task without floating inputs)
    patterns: list[InputPattern | None] | None = None


class TimeReference(_Msg):
    kind: Literal["time_reference"] = "time_reference"
    job_id: str
    timing: TimingSpec
    budget_ms: float
    min_reps: int
    max_reps: int
    with_compile: bool = False


class Release(_Msg):
    kind: Literal["release"] = "release"
    job_id: str


class MemoryQuery(_Msg):
    """How much memory the judge holds, and for what."""

    kind: Literal["memory"] = "memory"


class Synthesize(_Msg):
    """A task synthesis worker's one request (`executor/worker/_synth.py` lists them): synthesize practice tasks,
    check task sources, or list the installed torch's usable operators."""

    kind: Literal["synthesize"] = "synthesize"
    request: dict[str, Any]


class ProbeSizes(_Msg):
    """A size probe's request (`executor/worker/_size_probe.py`): run the reference of the task module at
    `task_path` at each candidate's sizes in turn, until one runs within `budget_s` CPU seconds or is slower.
    `threads`: torch's CPU threads for it (None: torch's own choice)."""

    kind: Literal["probe_sizes"] = "probe_sizes"
    task_path: str
    candidates: list[Candidate]
    budget_s: float
    threads: int | None = None


Command = Annotated[
    RunCandidate
    | Inputs
    | Proceed
    | TimeCandidate
    | Stop
    | Warm
    | Load
    | Prepare
    | Compare
    | TimeReference
    | Release
    | MemoryQuery
    | Synthesize
    | ProbeSizes,
    Field(discriminator="kind"),
]

# ---- events: worker -> evaluator -----------------------------------------------------------------


class Started(_Msg):
    """Imports are done; a GPU worker waits for Warm before touching the device."""

    kind: Literal["started"] = "started"


class Ready(_Msg):
    kind: Literal["ready"] = "ready"
    pid: int
    startup_s: float
    versions: dict[str, str | None]


class Phase(_Msg):
    kind: Literal["phase"] = "phase"
    phase: str
    detail: str = ""
    done: int | None = None
    total: int | None = None


class Failed(_Msg):
    """The candidate's evaluation ended early with a verdict (never `ok`)."""

    kind: Literal["failed"] = "failed"
    status: Status
    message: str
    error: ErrorDetail | None = None
    flags: list[AuditFlag] = Field(default_factory=list)
    shared_memory: dict[str, int] = Field(default_factory=dict)
    static_cost: list[KernelCost] = Field(default_factory=list)


class TargetCompiles(_Msg):
    """Launches of the candidate's kernels compiled for a GPU target on a machine without it (the compile check,
    and the interpreter, which compiles each launch it runs), and the task sizes they were compiled at."""

    target: str
    sizes: Literal["full", "small"]
    # the task's size names and the values assigned to them (small sizes); empty at full size
    size_values: dict[str, int | float] = Field(default_factory=dict)
    # distinct specializations (argument types, constexprs, options) compiled, per kernel
    specializations: dict[str, int] = Field(default_factory=dict)


class Compiled(_Msg):
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


class TrialsDone(_Msg):
    kind: Literal["trials_done"] = "trials_done"
    outputs: list[list[TensorFile]]
    triton_launches: int
    triton_kernels: list[str]
    flags: list[AuditFlag] = Field(default_factory=list)
    trial_s: float
    # interpret: every launch the trials ran, compiled for the GPU target too
    target_compiles: TargetCompiles | None = None


class Timed(_Msg):
    kind: Literal["timed"] = "timed"
    stats: Stats
    method: str
    host_bound_calls: int
    unseen_ms: float = 0.0
    rechecks: list[list[TensorFile]] = Field(default_factory=list)
    recheck_patterns: list[InputPattern | None] = Field(default_factory=list)
    triton_time_share: float | None = None
    flags: list[AuditFlag] = Field(default_factory=list)


class Prepared(_Msg):
    kind: Literal["prepared"] = "prepared"
    init_seed: int
    trial_seeds: list[int]
    timing_seed: int
    tolerances: list[Tolerance]
    task_flags: list[AuditFlag] = Field(default_factory=list)
    reference_mutates_inputs: bool = False
    reference_aliases_inputs: bool = False
    # The most elements the reference's outputs hold together in any trial.
    output_elements: int | None = None
    # On a GPU: the buffer the candidate writes its outputs to (its handle is on the side socket).
    outputs: DeviceExchange | None = None


class Loaded(_Msg):
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
    reduction_sizes: dict[str, int | float] | None = None
    reduction_names: list[str] = Field(default_factory=list)


class MemoryReport(_Msg):
    """The judge's memory: its cache of references against its budget, and the device's own counters."""

    kind: Literal["memory_report"] = "memory_report"
    judge: str
    budget_bytes: int
    cached_bytes: int
    entries: int
    allocated_bytes: int = 0
    reserved_bytes: int = 0
    free_bytes: int = 0
    total_bytes: int = 0


class Compared(_Msg):
    kind: Literal["compared"] = "compared"
    results: list[TrialResult]


class ReferenceTimed(_Msg):
    kind: Literal["reference_timed"] = "reference_timed"
    stats: Stats
    compile_stats: Stats | None = None
    # torch.compile of the reference failed (torch's fault or the reference's, never the candidate's)
    compile_error: str | None = None


class TaskFailed(_Msg):
    """The task itself could not be used (its code raised); the caller's fault, not the candidate's."""

    kind: Literal["task_failed"] = "task_failed"
    message: str
    traceback: str = ""


class Done(_Msg):
    kind: Literal["done"] = "done"


class Synthesized(_Msg):
    """A task synthesis worker's reply; `error` says why a request could not be read (then `reply` is empty)."""

    kind: Literal["synthesized"] = "synthesized"
    reply: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None


class SizeTried(_Msg):
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

_COMMANDS: TypeAdapter[Command] = TypeAdapter(Command)
_EVENTS: TypeAdapter[Event] = TypeAdapter(Event)


def encode(message: _Msg) -> bytes:
    return message.model_dump_json().encode() + b"\n"


def decode_command(line: bytes) -> Command:
    return _COMMANDS.validate_json(line)


def decode_event(line: bytes) -> Event:
    return _EVENTS.validate_json(line)
