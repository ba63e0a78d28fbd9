"""The three evaluation protocols as data: trials, seeds, numerics, tolerance and timing.

`strict` is ours. `kernelbench` follows KernelBench's current evaluation (per-dtype tolerances, five
trials, CUDA-event timing with an L2 flush, mean of 100). `paper` follows the protocol behind the
AdaExplore numbers (atol = rtol = 5e-2, fp32 with TF32 off, trimmed mean of 100 calls, no flush).
`flashinfer` follows FlashInfer-Bench's default evaluator (its `BenchmarkConfig` defaults in 0.1.2: three
trials, inputs drawn on the device in the task's own dtypes, 10 warm-up calls and the mean of 50, a 256 MiB
buffer zeroed before each call) and holds outputs to the task's own TOLERANCE, which the import read from
the package: an element fails where it misses both atol and rtol.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from adaexplore.domain import Mode, Tolerance

__all__ = ["ModeSpec", "NoTaskTolerance", "TimingSpec", "mode_spec", "tolerance_for"]

Statistic = Literal["median", "mean", "trimmed_mean"]


class TimingSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    method: str
    statistic: Statistic
    warmup_calls: int
    # Warm-up continues past `warmup_calls` until this much time has gone by, so an idle GPU has raised
    # its clocks before the first timed call (0: the call count alone, as the fixed protocols do).
    warmup_ms: float = 0.0
    # None: as many as the timing budget allows (strict); otherwise a fixed count.
    reps: int | None
    discard_first: int = 0
    trim_fraction: float = 0.0
    # "device": a buffer of twice the L2 size zeroed before each call; "fill256": KernelBench's 256 MiB fill.
    flush_l2: Literal["none", "device", "fill256"]
    # Every timed call gets its own buffers and values, and some outputs are checked again.
    fresh_inputs: bool
    no_grad: bool
    # On a GPU, calls are enqueued back to back in chunks, each timed by its own events, with one probe
    # per chunk for work the events miss (see worker/timing/_timing.py); otherwise one synchronized call at a time.
    pipelined: bool = False


class ModeSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Mode
    trials: int
    fresh_seeds: bool
    base_seed: int = 42
    # On a GPU, draw the task's inputs and initial weights there (the task's functions run with the GPU as
    # default device) instead of on the CPU and copying them over; the values differ from KernelBench's.
    generate_on_device: bool = False
    # "float64": the reference runs in float64 on upcast inputs; "native": in the task's own dtypes.
    reference_precision: Literal["float64", "native"]
    # KernelBench and the paper cast every floating input and the models to float32.
    cast_floats_to: str | None
    allow_tf32_matmul: bool
    allow_tf32_cudnn: bool
    # strict rejects a candidate in which no Triton kernel of its own ran; the others only flag it.
    require_triton: bool
    timing: TimingSpec


_SPECS: dict[Mode, ModeSpec] = {
    Mode.strict: ModeSpec(
        mode=Mode.strict,
        trials=5,
        fresh_seeds=True,
        generate_on_device=True,
        reference_precision="float64",
        cast_floats_to=None,
        allow_tf32_matmul=False,
        allow_tf32_cudnn=False,
        require_triton=True,
        timing=TimingSpec(
            method="events per call, enqueued back to back; median, fresh inputs, L2 flushed, unseen work added",
            statistic="median",
            warmup_calls=5,
            warmup_ms=100.0,
            reps=None,
            flush_l2="device",
            fresh_inputs=True,
            no_grad=True,
            pipelined=True,
        ),
    ),
    Mode.kernelbench: ModeSpec(
        mode=Mode.kernelbench,
        trials=5,
        fresh_seeds=False,
        reference_precision="native",
        cast_floats_to="float32",
        # PyTorch's defaults, which KernelBench leaves alone: cuDNN may use TF32, matmul may not.
        allow_tf32_matmul=False,
        allow_tf32_cudnn=True,
        require_triton=False,
        timing=TimingSpec(
            method="kernelbench cuda_event, mean of 100",
            statistic="mean",
            warmup_calls=3,
            reps=100,
            discard_first=1,
            flush_l2="fill256",
            fresh_inputs=False,
            no_grad=True,
        ),
    ),
    Mode.paper: ModeSpec(
        mode=Mode.paper,
        trials=5,
        fresh_seeds=False,
        reference_precision="native",
        cast_floats_to="float32",
        allow_tf32_matmul=False,
        allow_tf32_cudnn=False,
        require_triton=False,
        timing=TimingSpec(
            method="adaexplore cuda_event, trimmed mean of 100",
            statistic="trimmed_mean",
            warmup_calls=10,
            reps=100,
            trim_fraction=0.1,
            flush_l2="none",
            fresh_inputs=False,
            no_grad=False,
        ),
    ),
}


_SPECS[Mode.flashinfer] = ModeSpec(
    mode=Mode.flashinfer,
    trials=3,
    fresh_seeds=False,
    generate_on_device=True,
    reference_precision="native",
    cast_floats_to=None,
    # PyTorch's defaults, which FlashInfer-Bench leaves alone
    allow_tf32_matmul=False,
    allow_tf32_cudnn=True,
    require_triton=False,
    timing=TimingSpec(
        method="flashinfer-bench do_bench: mean of 50 after 10 warm-up calls, 256 MiB zeroed before each",
        statistic="mean",
        warmup_calls=10,
        reps=50,
        flush_l2="fill256",
        fresh_inputs=False,
        no_grad=True,
    ),
)


def mode_spec(mode: Mode) -> ModeSpec:
    return _SPECS[mode]


# strict: (atol as a multiple of rms(ref), rtol, normwise rtol). Set so that an honest implementation in
# the output's precision passes with a wide margin and one a precision lower fails: fp32 arithmetic lands
# near 1e-6 normwise, TF32 near 3e-4, fp16 near 3e-4 and bf16 near 2e-3.
_STRICT: dict[str, tuple[float, float, float]] = {
    "float64": (1e-9, 1e-9, 1e-10),
    "float32": (1e-4, 1e-4, 2e-5),
    "tf32": (5e-3, 5e-3, 2e-3),
    "float16": (1e-2, 1e-2, 2e-3),
    "bfloat16": (4e-2, 4e-2, 1.2e-2),
    "float8": (0.25, 0.25, 0.08),
}
_KERNELBENCH: dict[str, float] = {"float64": 1e-4, "float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}
_PAPER_TOLERANCE = 5e-2
_LOOSENESS = ["float64", "float32", "tf32", "float16", "bfloat16", "float8"]


def _precision_row(dtype: str) -> str | None:
    name = dtype.removeprefix("torch.")
    if name.startswith("float8"):
        return "float8"
    if name in ("half",):
        return "float16"
    if name in ("double",):
        return "float64"
    if name in ("float",):
        return "float32"
    # a complex number is a pair of its real dtype, and is held to that dtype's tolerance
    complex_parts = {"complex64": "float32", "cfloat": "float32", "complex128": "float64", "cdouble": "float64"}
    if name in complex_parts:
        return complex_parts[name]
    return name if name in _STRICT else None


class NoTaskTolerance(ValueError):
    """Mode `flashinfer` was asked of a task that declares no TOLERANCE of its own."""


def tolerance_for(
    mode: Mode, dtype: str, allowed_precision: str | None = None, task_tolerance: dict[str, float] | None = None
) -> Tolerance:
    """The tolerance for an output of `dtype` (torch dtype name) under `mode`.

    `allowed_precision` is a task's declaration that a lower internal precision is acceptable
    (for example "tf32" or "bfloat16"); the looser of the two rows applies. `task_tolerance` is the task's own
    TOLERANCE ({"atol", "rtol"}), which mode `flashinfer` uses, for every dtype, as FlashInfer-Bench does.

    Raises:
        NoTaskTolerance: mode `flashinfer` without a task tolerance.
    """
    row = _precision_row(dtype)
    spec = mode_spec(mode)
    ref_dtype = "float64" if spec.reference_precision == "float64" else (spec.cast_floats_to or dtype)
    if mode is Mode.flashinfer:
        if task_tolerance is None:
            raise NoTaskTolerance(
                "mode flashinfer holds outputs to the task's own TOLERANCE, and this task declares none; tasks "
                "imported from FlashInfer-Bench definitions carry it (choose another mode for this one)"
            )
        return Tolerance(
            kind="either", atol=task_tolerance["atol"], rtol=task_tolerance["rtol"], dtype=dtype, reference_dtype=dtype
        )
    if row is None:  # integers and booleans compare exactly
        return Tolerance(kind="allclose", atol=0.0, rtol=0.0, dtype=dtype, reference_dtype=dtype)
    if mode is Mode.paper:
        return Tolerance(
            kind="allclose", atol=_PAPER_TOLERANCE, rtol=_PAPER_TOLERANCE, dtype=dtype, reference_dtype=ref_dtype
        )
    if mode is Mode.kernelbench:
        tol = _KERNELBENCH.get(row, 1e-2)
        return Tolerance(kind="allclose", atol=tol, rtol=tol, dtype=dtype, reference_dtype=ref_dtype)
    allowed = _precision_row(allowed_precision) if allowed_precision else None
    if allowed is not None and _LOOSENESS.index(allowed) > _LOOSENESS.index(row):
        row = allowed
    atol, rtol, norm = _STRICT[row]
    return Tolerance(kind="scaled", atol=atol, rtol=rtol, norm_rtol=norm, dtype=dtype, reference_dtype=ref_dtype)
