"""Messages between the evaluator and its worker processes: one JSON object per line.

Only plain data crosses a process boundary. On a CPU, tensors travel as raw files in the job's exchange
directory and are named here by `TensorFile`; nothing is ever unpickled. On a GPU they stay in device
memory: the judge exports a buffer of its own (`DeviceExchange`), whose handle travels beside the message
that describes it, as a file descriptor on the worker's side socket.

The messages live in `_data` (what they carry), `_commands` (evaluator to worker) and `_events` (worker to
evaluator); this module is their one face.
"""

from __future__ import annotations

from adaexplore.executor.wire._commands import (
    Command,
    Compare,
    Inputs,
    Load,
    MemoryQuery,
    Prepare,
    ProbeSizes,
    Proceed,
    Release,
    RunCandidate,
    Stop,
    Synthesize,
    TimeCandidate,
    TimeReference,
    Warm,
    decode_command,
)
from adaexplore.executor.wire._data import (
    DeviceExchange,
    InputPattern,
    JobSpec,
    Msg,
    SharedArg,
    SharedInputs,
    TensorFile,
    TensorSlot,
)
from adaexplore.executor.wire._events import (
    COMPILED,
    COMPILING,
    Compared,
    Compiled,
    Coverage,
    CoverageGap,
    Done,
    Event,
    Failed,
    Loaded,
    MemoryReport,
    Phase,
    Prepared,
    Ready,
    ReferenceTimed,
    SizeTried,
    Started,
    Synthesized,
    TargetCompiles,
    TaskFailed,
    Timed,
    TrialsDone,
    decode_event,
)

__all__ = [
    "COMPILED",
    "COMPILING",
    "Command",
    "Compare",
    "Compared",
    "Compiled",
    "Coverage",
    "CoverageGap",
    "DeviceExchange",
    "Done",
    "Event",
    "Failed",
    "InputPattern",
    "Inputs",
    "JobSpec",
    "Load",
    "Loaded",
    "MemoryQuery",
    "MemoryReport",
    "Msg",
    "Phase",
    "Prepare",
    "Prepared",
    "ProbeSizes",
    "Proceed",
    "Ready",
    "ReferenceTimed",
    "Release",
    "RunCandidate",
    "SharedArg",
    "SharedInputs",
    "SizeTried",
    "Started",
    "Stop",
    "Synthesize",
    "Synthesized",
    "TargetCompiles",
    "TaskFailed",
    "TensorFile",
    "TensorSlot",
    "TimeCandidate",
    "TimeReference",
    "Timed",
    "TrialsDone",
    "Warm",
    "decode_command",
    "decode_event",
    "encode",
]


def encode(message: Msg) -> bytes:
    return message.model_dump_json().encode() + b"\n"
