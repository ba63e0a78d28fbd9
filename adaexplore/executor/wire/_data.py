"""The data that commands and events carry: tensors as files or device buffers, input patterns, and the job
both sides of an evaluation share. `Msg` is the base of every message: unknown fields are refused."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from adaexplore.domain import Mode, SizeValue

__all__ = ["DeviceExchange", "InputPattern", "JobSpec", "Msg", "SharedArg", "SharedInputs", "TensorFile", "TensorSlot"]


class Msg(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TensorFile(Msg):
    """A tensor written as raw contiguous bytes to `path` (relative to the exchange directory), or, with an
    empty path, copied into its place in the job's device exchange."""

    path: str = ""
    shape: list[int]
    dtype: str
    device: str
    # a sample of a large output: `sampled` of its elements (the file holds them alone), at the positions that
    # `worker/timing/_kept.positions(sample_seed, ...)` gives; 0 for the whole tensor
    sampled: int = Field(default=0, ge=0)
    sample_seed: int = Field(default=0, ge=0)


class TensorSlot(Msg):
    """Where one tensor lies in a device exchange buffer: `offset` bytes in, contiguous."""

    offset: int
    shape: list[int]
    dtype: str


class DeviceExchange(Msg):
    """A buffer of the judge's GPU memory that a candidate worker maps. `sets` lays out the outputs of the
    calls it holds (per call, per output tensor)."""

    nbytes: int
    sets: list[list[TensorSlot]] = Field(default_factory=list)


class SharedArg(Msg):
    """One argument of get_inputs(): a tensor in the shared inputs buffer, or a plain value."""

    tensor: TensorSlot | None = None
    value: int | float | bool | str | None = None


class SharedInputs(Msg):
    """The inputs the judge drew, in a buffer the candidate maps read-only and copies from: one list of
    arguments per trial seed, and the timing seed's."""

    nbytes: int
    trials: list[list[SharedArg]]
    timing: list[SharedArg]


class InputPattern(Msg):
    """The inputs of one timed call, told by how they were made from the timing seed's inputs: each
    floating tensor times factors read from a pool that `key` seeds, starting at its offset
    (worker/timing/_perturb.py). The judge rebuilds the same inputs from it to recheck that call's outputs."""

    key: int
    offsets: list[int]
    # per floating tensor: symmetric in its last two dims, so scaled as D·X·D (it stays symmetric)
    congruent: list[bool]
    # per floating tensor: 1 (-1) sorted ascending (descending) along its last dim, so sorted again after
    # scaling; 0 otherwise. Empty: none is.
    order: list[int] = []
    # set for a task with integer inputs: the call's inputs are get_inputs() drawn anew under this seed
    seed: int | None = None


class JobSpec(Msg):
    """What both the judge and a candidate worker need to know about one evaluation."""

    job_id: str
    task_path: str
    exchange_dir: str
    sizes: Literal["full", "small"]
    small_sizes: dict[str, SizeValue] | None = None
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
    # the evaluator's check at the task's full reduction lengths (pipeline/stages/precision.py): the interpreter's
    # launches are not compiled for sm_90 again (they were, at the small and the full sizes), and the judge says how
    # far the normwise error of the sample it compares may stray from that of every output (norm_rel_spread)
    reduction_check: bool = False
    # the judge keeps this job's reference, fresh seeds and all, for the one evaluation that will take them
    # (a reference built ahead), and keeps its inputs on a GPU
    keep_reference: bool = False
