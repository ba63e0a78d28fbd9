"""The estimate refitted to one GPU's own verdicts (`adaexplore calibrate`).

The package's efficiencies (`Calibration`) were fitted on an H200 to a corpus of kernels. A store whose GPU timed
kernels of its own holds what those kernels launch at full size (the estimate's inputs) and what the GPU measured,
so the estimate can be refitted to that GPU: five factors, each multiplying the efficiencies of one group (the
tensor cores, the CUDA cores, Triton's memory traffic, PyTorch's compute libraries, PyTorch's memory-bound
kernels). Few parameters, bounded (1/4 to 4) and held near 1 by a small penalty, so that a few dozen kernels fit
them without chasing noise, and a group no kernel exercises stays at 1.

Scored by the median |log(estimated / measured)| of kernel times, on verdicts the fit did not see: each problem
(task) in turn left out and predicted by the factors fitted on the others; with a single problem, five folds of
its kernels.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import median

from pydantic import BaseModel, ConfigDict, Field

from adaexplore.roofline._estimate import CALIBRATION, Calibration, estimate_forward
from adaexplore.roofline._gpus import GpuSpec
from adaexplore.roofline._work import ForwardWork

__all__ = [
    "FACTOR_GROUPS",
    "MIN_KERNELS",
    "GpuCalibration",
    "Refit",
    "TimedKernel",
    "base_digest",
    "fit_factors",
    "refit",
    "scaled",
]

# the fewest kernels a fit takes: five factors need several kernels each to stand on
MIN_KERNELS = 20
# each factor and the efficiencies it multiplies (a field the package's Calibration lacks is skipped)
FACTOR_GROUPS: dict[str, tuple[str, ...]] = {
    "tensor_cores": ("tensor_cores", "split_products", "small_tiles"),
    "cuda_cores": ("cuda_cores", "elementwise", "loop_issue"),
    "memory": ("memory", "cache_rate"),
    "library_compute": ("library_gemm", "library_conv", "library_tensor_cores"),
    "library_memory": ("library_memory",),
}
_BOUND = math.log(4.0)
# the penalty on each factor's log, against the mean |log error|: a factor moves where kernels ask it to
_PRIOR = 0.001
_FOLDS = 5


def base_digest(base: Calibration = CALIBRATION) -> str:
    """What a calibration's factors multiply: a digest of the package's efficiencies, so that a calibration fitted
    against other ones (another version's estimate) is known as stale."""
    text = repr(sorted(dataclasses.asdict(base).items()))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


class GpuCalibration(BaseModel):
    """One GPU model's factors, fitted to a store's verdicts, and how well they did on held-out verdicts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gpu: str  # the GPU table's name ("H200")
    factors: dict[str, float]
    kernels: int  # distinct kernels (a task and a code) the fit read
    problems: int  # distinct tasks among them
    held_out: str  # how the errors were scored: "leave one problem out" or "5 folds of one problem's kernels"
    # median |log(estimated / measured)| of kernel times on held-out verdicts: the package's efficiencies, the fit's
    error_before: float
    error_after: float
    # the same of speedups over eager PyTorch
    speedup_error_before: float | None = None
    speedup_error_after: float | None = None
    base: str = Field(default_factory=base_digest)  # `base_digest` of the efficiencies the factors multiply
    created_at: str = ""  # when it was fitted (ISO 8601, UTC)
    id: int | None = None  # the store's row

    @property
    def date(self) -> str:
        return self.created_at[:10]

    @property
    def current(self) -> bool:
        """Whether the factors multiply this package's efficiencies (else fitted against another estimate)."""
        return self.base == base_digest()

    def label(self) -> str:
        """ "calibration 3 (H200, 2026-12-07: 52 kernels, held-out error 0.41 -> 0.19)"."""
        return (
            f"calibration {self.id} ({self.gpu}, {self.date}: {self.kernels} kernels, held-out error "
            f"{self.error_before:.2f} -> {self.error_after:.2f})"
        )

    def applied(self, base: Calibration = CALIBRATION) -> Calibration:
        return scaled(base, self.factors)


def scaled(base: Calibration, factors: dict[str, float]) -> Calibration:
    """`base` with each group's efficiencies multiplied by its factor."""
    have = {f.name for f in dataclasses.fields(base)}
    changes: dict[str, float] = {}
    for group, factor in factors.items():
        for name in FACTOR_GROUPS.get(group, ()):
            if name in have:
                changes[name] = getattr(base, name) * factor
    return dataclasses.replace(base, **changes)


@dataclass(frozen=True)
class TimedKernel:
    """A kernel a GPU timed: what it and its task's reference launch at full size, and their measured times."""

    problem: str  # its task: verdicts of one problem are held out together
    kernel: ForwardWork
    reference: ForwardWork
    kernel_ms: float
    reference_ms: float
    tf32_matmul: bool = False
    tf32_conv: bool = False


def _errors(kernels: Sequence[TimedKernel], gpu: GpuSpec, cal: Calibration) -> list[tuple[float, float]]:
    """Each kernel's log(estimated / measured) of its time and of its speedup over the reference."""
    out = []
    for k in kernels:
        mine = estimate_forward(k.kernel, gpu, tf32_matmul=k.tf32_matmul, tf32_conv=k.tf32_conv, calibration=cal).ms
        theirs = estimate_forward(
            k.reference, gpu, tf32_matmul=k.tf32_matmul, tf32_conv=k.tf32_conv, calibration=cal
        ).ms
        if mine <= 0 or theirs <= 0:
            continue
        time = math.log(mine / k.kernel_ms)
        out.append((time, math.log(theirs / k.reference_ms) - time))
    return out


def fit_factors(kernels: Sequence[TimedKernel], gpu: GpuSpec, base: Calibration = CALIBRATION) -> dict[str, float]:
    """The factors that best fit the kernels' and their references' measured times, by a coordinate search in log
    space whose step halves each round, within the bounds. The loss is the mean |log(estimated / measured)|: a
    kernel the estimate misses by far (a design it cannot see) counts no more than its distance, so a few such do
    not drag the factors that fit the rest."""

    def loss(logs: dict[str, float]) -> float:
        cal = scaled(base, {g: math.exp(v) for g, v in logs.items()})
        terms = []
        for k in kernels:
            for work, measured in ((k.kernel, k.kernel_ms), (k.reference, k.reference_ms)):
                ms = estimate_forward(work, gpu, tf32_matmul=k.tf32_matmul, tf32_conv=k.tf32_conv, calibration=cal).ms
                if ms > 0:
                    terms.append(abs(math.log(ms / measured)))
        return sum(terms) / max(len(terms), 1) + _PRIOR * sum(v * v for v in logs.values())

    logs = dict.fromkeys(FACTOR_GROUPS, 0.0)
    best = loss(logs)
    step = 0.5
    while step > 0.01:
        for _ in range(4):  # passes at this step while one still helps
            moved = False
            for group in FACTOR_GROUPS:
                for sign in (1, -1):
                    trial = {**logs, group: max(-_BOUND, min(_BOUND, logs[group] + sign * step))}
                    value = loss(trial)
                    if value < best - 1e-12:
                        logs, best, moved = trial, value, True
                        break
            if not moved:
                break
        step /= 2
    return {g: round(math.exp(v), 4) for g, v in logs.items()}


@dataclass(frozen=True)
class Refit:
    """A fit's outcome before it is stored: the factors and their held-out errors."""

    factors: dict[str, float]
    kernels: int
    problems: int
    held_out: str
    error_before: float
    error_after: float
    speedup_error_before: float
    speedup_error_after: float


def refit(
    kernels: Sequence[TimedKernel],
    gpu: GpuSpec,
    base: Calibration = CALIBRATION,
    fit: Callable[[Sequence[TimedKernel], GpuSpec, Calibration], dict[str, float]] = fit_factors,
) -> Refit:
    """Fit the factors on every kernel and score the fit on held-out ones: each problem predicted by the factors
    fitted without it (with one problem, each fifth of its kernels by those fitted on the rest), against the
    package's efficiencies on the same kernels.

    Raises:
        ValueError: fewer than `MIN_KERNELS` kernels.
    """
    if len(kernels) < MIN_KERNELS:
        raise ValueError(f"{len(kernels)} kernels, {MIN_KERNELS} needed")
    problems = sorted({k.problem for k in kernels})
    if len(problems) > 1:
        groups = [[k for k in kernels if k.problem == p] for p in problems]
        held_out = "leave one problem out"
    else:
        groups = [list(kernels[i::_FOLDS]) for i in range(_FOLDS)]
        held_out = f"{_FOLDS} folds of one problem's kernels"
    before = _errors(kernels, gpu, base)
    after: list[tuple[float, float]] = []
    for group in groups:
        rest = [k for k in kernels if not any(k is g for g in group)]
        after.extend(_errors(group, gpu, scaled(base, fit(rest, gpu, base))))

    def med(values: list[tuple[float, float]], i: int) -> float:
        return median(abs(v[i]) for v in values) if values else math.nan

    return Refit(
        factors=fit(kernels, gpu, base),
        kernels=len(kernels),
        problems=len(problems),
        held_out=held_out,
        error_before=med(before, 0),
        error_after=med(after, 0),
        speedup_error_before=med(before, 1),
        speedup_error_after=med(after, 1),
    )
