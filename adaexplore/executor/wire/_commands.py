"""Commands: what the evaluator tells a worker (a candidate's worker, the judge, a probe), and their union
`Command` as a worker reads it."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from adaexplore.executor.tasks._small_sizes import FULL_CHECK_BUDGET_S, Candidate
from adaexplore.executor.wire._data import DeviceExchange, InputPattern, JobSpec, Msg, SharedInputs, TensorFile
from adaexplore.executor.wire._modes import TimingSpec

__all__ = [
    "Command",
    "Compare",
    "Inputs",
    "Load",
    "MemoryQuery",
    "Prepare",
    "ProbeSizes",
    "Proceed",
    "Release",
    "RunCandidate",
    "Stop",
    "Synthesize",
    "TimeCandidate",
    "TimeReference",
    "Warm",
    "decode_command",
]


class RunCandidate(Msg):
    kind: Literal["run"] = "run"
    job: JobSpec
    candidate_path: str
    # cuda: compile every kernel once before the GPU is taken, so compiling overlaps other timing.
    compile_pass: bool = False
    shared_memory_limit: int = 232448
    require_triton: bool = True
    # Wait for an `Inputs` command after building the model, instead of drawing get_inputs() here.
    shared_inputs: bool = False


class Inputs(Msg):
    """The judge's inputs for this job (their buffer's handle is on the side socket), or None: draw them."""

    kind: Literal["inputs"] = "inputs"
    shared: SharedInputs | None = None


class Proceed(Msg):
    kind: Literal["proceed"] = "proceed"
    # Set when the task's own reference does the same, so the candidate may too.
    allow_input_mutation: bool = False
    allow_aliasing: bool = False
    # Outputs holding more elements than the reference's are refused before they are written anywhere: a
    # broadcast view of a huge shape costs the candidate nothing and the evaluator its memory.
    max_output_elements: int | None = None
    # On a GPU: where outputs go (the buffer's handle is on the side socket). None: raw files.
    outputs: DeviceExchange | None = None


class TimeCandidate(Msg):
    kind: Literal["time"] = "time"
    timing: TimingSpec
    budget_ms: float
    min_reps: int
    max_reps: int
    # How many timed calls' outputs to keep for the judge, chosen as the calls return (worker/timing/_timing.Sampler)
    recheck_calls: int = 0
    # the most bytes those kept outputs may take together
    recheck_bytes: int = 1 << 32
    # where whole copies would take more: the elements of each output kept per call, at random positions
    recheck_sample: int = 1 << 20


class Stop(Msg):
    kind: Literal["stop"] = "stop"


class Warm(Msg):
    """Run the GPU part of start-up now (the evaluator holds the device, so no timing is disturbed)."""

    kind: Literal["warm"] = "warm"


class Load(Msg):
    """Import the task, build the reference model and the trial inputs (host work, before the device is held)."""

    kind: Literal["load"] = "load"
    job: JobSpec


class Prepare(Msg):
    """Compute the reference outputs of a loaded job (device work)."""

    kind: Literal["prepare"] = "prepare"
    job_id: str
    # device exchange: how many calls' outputs its buffer holds at once (at least the trials)
    output_sets: int = 0
    # ... within this many bytes beyond the trials' own
    output_bytes: int = 1 << 32


class Compare(Msg):
    kind: Literal["compare"] = "compare"
    job_id: str
    outputs: list[list[TensorFile]]
    # For outputs of timed calls: how each call's inputs were made (None for correctness trials).
    # (None for a call that had the timing inputs themselves: a task without floating inputs)
    patterns: list[InputPattern | None] | None = None


class TimeReference(Msg):
    kind: Literal["time_reference"] = "time_reference"
    job_id: str
    timing: TimingSpec
    budget_ms: float
    min_reps: int
    max_reps: int
    with_compile: bool = False


class Release(Msg):
    kind: Literal["release"] = "release"
    job_id: str


class MemoryQuery(Msg):
    """How much memory the judge holds, and for what. With `task_path`: also what that task's reference does at
    its full sizes (recorded on shape-only tensors, so nothing is allocated on the device), from which the
    evaluator estimates the device memory an evaluation of it takes. With `evict_idle`: first drop the kept
    references that no job uses."""

    kind: Literal["memory"] = "memory"
    task_path: str | None = None
    cast_floats_to: str | None = None
    evict_idle: bool = False


class Synthesize(Msg):
    """A task synthesis worker's one request (`executor/worker/synth/_synth.py` lists them): synthesize practice tasks,
    check task sources, or list the installed torch's usable operators."""

    kind: Literal["synthesize"] = "synthesize"
    request: dict[str, Any]


class ProbeSizes(Msg):
    """A size probe's request (`executor/worker/judge/_size_probe.py`): run the reference of the task module at
    `task_path` at each candidate's sizes in turn, until one runs within `budget_s` CPU seconds or is slower.
    `threads`: torch's CPU threads for it (None: torch's own choice). Where every candidate that ran makes the task
    degenerate, the task is checked at its full sizes if that is expected to take at most `full_check_s` CPU s."""

    kind: Literal["probe_sizes"] = "probe_sizes"
    task_path: str
    candidates: list[Candidate]
    budget_s: float
    threads: int | None = None
    full_check_s: float = FULL_CHECK_BUDGET_S


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

_COMMANDS: TypeAdapter[Command] = TypeAdapter(Command)


def decode_command(line: bytes) -> Command:
    return _COMMANDS.validate_json(line)
