"""The domain's words, at the bottom of the package and free of torch: a verdict's `Status`, the `Mode` it follows,
the `Backend` it ran on, a node's `Kind`, and the `Evaluation` with its parts (plain pydantic data, the same on both
sides of a worker). Every layer may import this module; it imports none of them."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "DRAWS_IN_FORWARD",
    "Audit",
    "AuditFlag",
    "Backend",
    "Correctness",
    "Degeneracy",
    "ErrorDetail",
    "Estimate",
    "EstimatePart",
    "Evaluation",
    "InputSetResult",
    "KernelCost",
    "Kind",
    "Mode",
    "Provenance",
    "Seeds",
    "SizeValue",
    "SpeedOfLight",
    "Stats",
    "Status",
    "Timing",
    "Tolerance",
    "TrialResult",
]


# one entry of a task's SMALL_SIZES: a number, or the small values of a module-level list or tuple of sizes
# (`hidden_layer_sizes = [32768, 32768]`), element for element
SizeValue = int | float | list[int]


class Status(StrEnum):
    """The verdict of one evaluation (DESIGN §5)."""

    ok = "ok"
    syntax_error = "syntax_error"
    compile_error = "compile_error"
    runtime_error = "runtime_error"
    mismatch = "mismatch"
    timeout = "timeout"
    crashed = "crashed"
    rejected = "rejected"
    infra_error = "infra_error"


class Mode(StrEnum):
    """The protocol a verdict follows."""

    strict = "strict"
    kernelbench = "kernelbench"
    paper = "paper"
    # FlashInfer-Bench's default evaluator: the task's own dtypes and tolerance (its TOLERANCE)
    flashinfer = "flashinfer"


class Backend(StrEnum):
    """Where a candidate runs."""

    cuda = "cuda"
    compile = "compile"
    interpret = "interpret"


class Kind(StrEnum):
    """How a node of the search tree was made: the root (the task's reference), or a large or small step."""

    root = "root"
    large = "large"
    small = "small"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Tolerance(_Model):
    """What counts as equal. `allclose`: |out-ref| <= atol + rtol*|ref| per element.
    `scaled`: per element |out-ref| <= atol*rms(ref) + rtol*|ref|, and ||out-ref|| <= norm_rtol*||ref||.
    `either`: per element |out-ref| <= atol or |out-ref| <= rtol*|ref| (an element fails only where it misses
    both, FlashInfer-Bench's rule)."""

    kind: Literal["allclose", "scaled", "either"]
    atol: float
    rtol: float
    norm_rtol: float | None = None
    dtype: str
    reference_dtype: str


class TrialResult(_Model):
    index: int
    seed: int
    passed: bool
    max_abs_error: float | None = None
    max_scaled_error: float | None = None
    norm_rel_error: float | None = None
    reference_norm_rel_error: float | None = None
    # how far norm_rel_error, measured on a sample of the outputs, may stray from that of all of them (a jackknife's
    # standard error; the evaluator's check at the full reduction lengths alone reports it)
    norm_rel_spread: float | None = None
    message: str | None = None


class Correctness(_Model):
    passed: bool
    trials: list[TrialResult]
    tolerance: Tolerance
    # Outputs of timed calls, checked again after timing (strict mode).
    rechecks: list[TrialResult] = Field(default_factory=list)


class Stats(_Model):
    """Per-call times of one model, in milliseconds."""

    n: int
    median_ms: float
    mean_ms: float
    # untimed warm-up calls made before the n timed ones
    warmup_n: int = 0
    std_ms: float
    min_ms: float
    max_ms: float
    p10_ms: float
    p90_ms: float
    trimmed_mean_ms: float | None = None

    def value(self, statistic: str) -> float:
        """The number a speedup is computed from under `statistic`."""
        if statistic == "median":
            return self.median_ms
        if statistic == "trimmed_mean" and self.trimmed_mean_ms is not None:
            return self.trimmed_mean_ms
        return self.mean_ms


class Timing(_Model):
    method: str
    statistic: Literal["median", "mean", "trimmed_mean"]
    candidate: Stats
    reference: Stats
    speedup: float
    reference_compile: Stats | None = None
    speedup_vs_compile: float | None = None
    # why there is no torch.compile timing although one was asked for
    compile_error: str | None = None
    reference_cached: bool = False
    # Timed calls charged with work their CUDA events could not see (the device still busy on other
    # streams after the current one finished): in strict timing all of them or none.
    host_bound_calls: int = 0
    # What the probes measured of that unseen work per call (median, ms), charged or not; 0 where not probed.
    unseen_ms: float = 0.0


class AuditFlag(_Model):
    code: str
    severity: Literal["reject", "warn", "info"]
    message: str


# the task flag of a task whose forward draws random numbers: its trials are seeded alike, its timed calls unchecked
DRAWS_IN_FORWARD = "draws_in_forward"

# what every place that shows a degenerate task's results says of them
DEGENERATE_ZERO = "any kernel that writes 0 is correct on this task: its speedups say nothing"


class Degeneracy(_Model):
    """A task whose reference cannot tell kernels apart, found from the reference alone (float32 and float64, two
    draws of its inputs) under strict's tolerance: one output is a `constant` (zero or one value, the same for both
    draws), float32 rounding `noise` (PyTorch's float32 reference is no closer to the float64 one than a constant
    is), or `input_blind` (two different draws give the same output). `sizes`: where it was found."""

    kind: Literal["constant", "noise", "input_blind"]
    output: int = 0
    outputs: int = 1
    value: float | None = None  # the constant a kernel may write (0 for noise)
    sizes: Literal["full", "small"] = "full"

    def what(self) -> str:
        """What the output is, in a few words."""
        which = f"output {self.output}" if self.outputs > 1 else "its output"
        if self.kind == "noise":
            return f"{which} is float32 rounding noise around 0, whatever the input"
        if self.kind == "constant" and self.value == 0:
            return f"{which} is 0 everywhere, whatever the input"
        if self.kind == "constant":
            return f"{which} is one value everywhere ({self.value:.4g} with these weights), whatever the input"
        return f"{which} does not depend on the inputs (two different draws give the same output)"

    def where(self) -> str:
        return "at its full sizes" if self.sizes == "full" else "at its small sizes (its full ones were not checked)"

    def line(self) -> str:
        """The one line every place that shows the task's results gives."""
        if self.kind == "noise" or (self.kind == "constant" and self.value == 0):
            consequence = DEGENERATE_ZERO
        elif self.kind == "constant":
            consequence = "a kernel that writes that one value is correct on this task: its speedups say nothing"
        else:
            consequence = "a kernel that ignores its inputs is correct on this task: its speedups say nothing"
        return f"degenerate task: {self.what()}, {self.where()}; {consequence}"


class KernelCost(_Model):
    """One kernel compiled for the GPU target at one size, under one config (an autotune config or the launch's
    own constexprs and options), as the assembler reports it. `skipped`: why this config was left out (it does
    not compile, or needs more shared memory than the GPU has), as a GPU's autotuner would leave it out."""

    kernel: str
    sizes: Literal["full", "small"]
    config: str
    autotuned: bool = False
    registers: int | None = None
    # bytes per thread written to and read from local memory because registers ran out
    spill_stores: int = 0
    spill_loads: int = 0
    shared_memory: int | None = None
    # the assembler's warnings, in plain words
    warnings: list[str] = Field(default_factory=list)
    # its advisories (`ptxas info : (C7515) Potential Performance Loss: ...`), each in one line with what usually
    # fixes it
    advisories: list[str] = Field(default_factory=list)
    skipped: str | None = None


class Audit(_Model):
    flags: list[AuditFlag] = Field(default_factory=list)
    # Triton launches from the candidate's own kernels in one forward call, and their names.
    triton_launches: int | None = None
    triton_kernels: list[str] = Field(default_factory=list)
    # Share of the GPU time of one forward spent in the candidate's Triton kernels.
    triton_time_share: float | None = None
    # Shared memory per compiled kernel in bytes (compile backend).
    shared_memory: dict[str, int] = Field(default_factory=dict)
    # Static cost of each kernel per config, at the small sizes and the task's full ones (compile backend).
    static_cost: list[KernelCost] = Field(default_factory=list)

    @property
    def rejected(self) -> bool:
        return any(f.severity == "reject" for f in self.flags)


class ErrorDetail(_Model):
    type: str
    message: str
    phase: str
    traceback: str = ""


class Seeds(_Model):
    init: int
    trials: list[int]
    timing: int | None = None
    # Where the seeded generator ran: "cpu" (KernelBench's way, then moved to the device) or "cuda" (the
    # task's factories called with the GPU as default device, so inputs and weights are drawn there).
    generator: Literal["cpu", "cuda"] = "cpu"


class Provenance(_Model):
    adaexplore: str
    python: str
    torch: str | None = None
    triton: str | None = None
    numpy: str | None = None
    gpu: str | None = None
    # which of the visible GPUs judged and timed it (0 for the first); its speedup is against a reference timed
    # on that same GPU. None on the CPU backends.
    device: int | None = None
    driver: str | None = None
    cuda: str | None = None
    compile_target: str | None = None
    environment: str = ""
    task_hash: str
    code_hash: str
    sizes: Literal["full", "small"]
    seeds: Seeds | None = None
    timing_method: str | None = None
    finished_at: str
    # The operating system's wall around the workers: bwrap, landlock+seccomp or none; and what it held.
    sandbox: str = "none"
    sandbox_detail: str | None = None
    # 2: the first attempt failed through no fault of the candidate (infra_error) and was run again
    attempts: int = Field(default=1, ge=1)
    # How outputs and inputs passed between the candidate's worker and the judge: "device" (GPU memory the
    # judge shared), "device outputs, ..." (the judge could not share the inputs), "files" (host memory)
    tensor_exchange: str | None = None


class SpeedOfLight(_Model):
    """The least time a task can take on a GPU model: its reference's minimum memory traffic (inputs and
    parameters read once, outputs written once) at the HBM's peak, or its matrix-multiply FLOPs by the fastest
    path whose error its tolerance admits, whichever is longer (and never under one launch). Where a GPU timed
    the kernel, `fraction` is this time over the kernel's measured time (1 is the hardware's limit; above 1 the
    verdict carries a `faster_than_light` warning) and `reference_fraction` the same for eager PyTorch."""

    gpu: str
    ms: float
    bound: Literal["memory", "compute", "launch"]
    memory_ms: float
    compute_ms: float
    bytes: float
    flops: float
    # how fp32 matrix products count: the fastest path whose error the tolerance admits (roofline/_sol.py):
    # "bf16x3" (three bf16 products of split operands, fp32 accuracy) where it holds fp32 outputs to fp32 accuracy,
    # "fp16" (one product, TF32's error) where it admits TF32, "bf16" or "fp8" where it admits theirs; verdicts
    # stored before this was so say "tf32x3" or "tf32"
    fp32_matmuls: str = "bf16x3"
    # the path taken for the products of each operand dtype the reference multiplies in
    matmul_paths: dict[str, str] = Field(default_factory=dict)
    # operators of the reference whose FLOPs could not be counted (their bytes are)
    uncounted: list[str] = Field(default_factory=list)
    # False: the reference's forward could not be followed to its end on shape-only tensors
    complete: bool = True
    fraction: float | None = None
    reference_fraction: float | None = None
    # what no kernel beats however it is timed (roofline/_sol.py): the compute bound, and the traffic that cannot stay
    # in the GPU's L2 cache at the HBM's peak; one launch's cost is a figure measured back to back, and traffic that
    # fits in the cache may never reach the HBM while a kernel is timed (None in verdicts stored before: `ms`)
    hard_ms: float | None = None

    @property
    def floor_ms(self) -> float:
        return self.hard_ms if self.hard_ms is not None else self.ms


class EstimatePart(_Model):
    """One launch or library call of an estimate."""

    step: str
    ms: float
    limit: str
    detail: str = ""


class Estimate(_Model):
    """A correct kernel's time on a GPU model, estimated from its launches and library calls at full size
    (not measured), against the reference's eager time estimated the same way."""

    gpu: str
    ms: float
    reference_ms: float
    speedup: float
    # what the estimate is made of, in one line
    summary: str
    parts: list[EstimatePart] = Field(default_factory=list)
    # the task's speed of light over the estimated time
    sol_fraction: float | None = None
    # False: some launch's work was guessed (a loop bound or branch depending on data)
    exact: bool = True
    # the efficiencies it used where not the package's: a calibration this store's GPU verdicts fitted for this GPU
    # (`adaexplore calibrate`), named by its id, date, kernels and held-out error
    calibration: str | None = None


class InputSetResult(_Model):
    """The verdict on one input set of a task that has several (a FlashInfer-Bench definition's workloads)."""

    label: str
    # the module-level names the set assigns (the workload's axes) and their values
    sizes: dict[str, int | float] = Field(default_factory=dict)
    status: Status
    message: str = ""
    speedup: float | None = None
    speedup_vs_compile: float | None = None
    candidate_ms: float | None = None
    reference_ms: float | None = None


class Evaluation(_Model):
    """The verdict on one candidate: what happened, how it was measured, and where. A task with several input
    sets is judged on each (`input_sets`); its status is the first that fails, and its speedup their geometric
    mean."""

    status: Status
    message: str
    mode: Mode
    backends: list[Backend]
    timed: bool
    correctness: Correctness | None = None
    timing: Timing | None = None
    audit: Audit = Field(default_factory=Audit)
    error: ErrorDetail | None = None
    output: str = ""
    phases: dict[str, float] = Field(default_factory=dict)
    provenance: Provenance
    input_sets: list[InputSetResult] = Field(default_factory=list)
    # the task's speed of light on the GPU that timed the kernel, or on the target GPU where none did
    speed_of_light: SpeedOfLight | None = None
    # where nothing timed a correct kernel: its estimated time on the target GPU (never a measurement)
    estimate: Estimate | None = None
    # where a GPU timed a correct kernel: what it launches at full size (roofline.ForwardWork as JSON), the
    # estimate's input, which `adaexplore calibrate` fits against the measured time. The tools keep it in the store
    # beside the verdict, not in the verdict they store or answer with.
    forward_work: str | None = None

    @property
    def speedup(self) -> float | None:
        return self.timing.speedup if self.timing else None

    @property
    def sol_fraction(self) -> float | None:
        """The measured kernel's share of the speed of light (None where nothing timed it)."""
        return self.speed_of_light.fraction if self.speed_of_light else None

    @property
    def estimated_speedup(self) -> float | None:
        return self.estimate.speedup if self.estimate else None

    @property
    def speedup_ceiling(self) -> float | None:
        """The most speedup over eager PyTorch that the task's speed of light allows: eager's time over its floor
        (`SpeedOfLight.floor_ms`), eager's measured time where a GPU timed the kernel against a speed of light for
        that GPU, else eager's estimated time where the kernel has an estimate (None where neither holds)."""
        sol = self.speed_of_light
        if sol is None or sol.floor_ms <= 0:
            return None
        if self.timing is not None:
            if sol.fraction is None:  # the speed of light is for another GPU than the one that timed it
                return None
            return self.timing.reference.value(self.timing.statistic) / sol.floor_ms
        if self.estimate is not None and self.estimate.gpu == sol.gpu:
            return self.estimate.reference_ms / sol.floor_ms
        return None

    @property
    def credited_speedup(self) -> float | None:
        """The measured speedup as rewards and rankings count it: never above `speedup_ceiling` (a kernel
        measured faster than light is flagged `faster_than_light`, and earns no more than the floor allows)."""
        return _at_most(self.speedup, self.speedup_ceiling)

    @property
    def credited_estimated_speedup(self) -> float | None:
        """The estimated speedup as rewards and rankings count it, held to `speedup_ceiling` the same way."""
        return _at_most(self.estimated_speedup, self.speedup_ceiling)


def _at_most(speedup: float | None, ceiling: float | None) -> float | None:
    if speedup is None or ceiling is None:
        return speedup
    return min(speedup, ceiling)
