"""`adaexplore calibrate`: the estimate refitted to the GPU verdicts in the store, per GPU model (roofline/_refit.py),
stored there so that every later estimate for that GPU model, on any machine that reads the store, uses it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from statistics import median

from adaexplore.config import Settings
from adaexplore.domain import Evaluation, Mode
from adaexplore.errors import AdaexploreError, RequestError
from adaexplore.executor import mode_spec
from adaexplore.roofline import (
    MIN_KERNELS,
    ForwardWork,
    GpuCalibration,
    GpuSpec,
    Refit,
    TaskWork,
    TimedKernel,
    gpu_for_device,
    gpu_spec,
    refit,
)
from adaexplore.store import TimedVerdict, open_store, store_exists
from adaexplore.tools._service import Services

# the fewest kernels of one GPU model a calibration is fitted on
MIN_CALIBRATION_KERNELS = MIN_KERNELS
# how much better on held-out verdicts a fit must be to be kept (a smaller gain is within what another draw of
# the same kernels changes)
_MARGIN = 0.05

__all__ = [
    "MIN_CALIBRATION_KERNELS",
    "CalibrateReport",
    "GpuOutcome",
    "calibrate",
    "calibrations_in_force",
    "stored_calibrations",
    "timed_kernels",
    "worth_keeping",
]


@dataclass
class GpuOutcome:
    """One GPU model's fit: its calibration (stored unless a dry run), or why there is none."""

    gpu: str
    kernels: int
    calibration: GpuCalibration | None = None
    refused: str = ""


@dataclass
class CalibrateReport:
    outcomes: list[GpuOutcome] = field(default_factory=list)
    # correct timed kernels the fit cannot read: without what they launch at full size, or on a GPU the table lacks
    unrecorded: int = 0
    unknown_gpus: dict[str, int] = field(default_factory=dict)
    stored: bool = False


def _measured(evaluation: Evaluation) -> tuple[float, float] | None:
    timing = evaluation.timing
    if timing is None:
        return None
    mine, theirs = timing.candidate.value(timing.statistic), timing.reference.value(timing.statistic)
    return (mine, theirs) if mine > 0 and theirs > 0 else None


def timed_kernels(verdicts: list[TimedVerdict]) -> tuple[dict[str, list[TimedKernel]], CalibrateReport]:
    """The store's timed verdicts as kernels to fit on, by GPU model: one per task, code, mode and GPU (the median
    of its measured times where it was timed more than once)."""
    report = CalibrateReport()
    grouped: dict[tuple[str, str, str, str], list[tuple[TimedVerdict, float, float]]] = defaultdict(list)
    for verdict in verdicts:
        evaluation = Evaluation.model_validate_json(verdict.result)
        measured = _measured(evaluation)
        if measured is None:
            report.unrecorded += 1
            continue
        device = evaluation.provenance.gpu or "an unnamed GPU"
        spec = gpu_for_device(device)
        if spec is None:
            report.unknown_gpus[device] = report.unknown_gpus.get(device, 0) + 1
            continue
        grouped[(spec.name, verdict.task_id, verdict.code_hash, verdict.mode)].append((verdict, *measured))
    by_gpu: dict[str, list[TimedKernel]] = defaultdict(list)
    for (gpu, task_id, _, mode), timed in sorted(grouped.items()):
        latest = timed[-1][0]
        try:
            kernel = ForwardWork.model_validate_json(latest.work)
            reference = TaskWork.model_validate_json(latest.task_work).forward
        except ValueError:  # recorded by another version of adaexplore, in a shape this one does not read
            report.unrecorded += len(timed)
            continue
        if not reference.complete:
            report.unrecorded += len(timed)
            continue
        flags = mode_spec(Mode(mode))
        by_gpu[gpu].append(
            TimedKernel(
                problem=task_id,
                kernel=kernel,
                reference=reference,
                kernel_ms=median(t[1] for t in timed),
                reference_ms=median(t[2] for t in timed),
                tf32_matmul=flags.allow_tf32_matmul,
                tf32_conv=flags.allow_tf32_cudnn,
            )
        )
    return dict(by_gpu), report


def calibrate(svc: Services, gpu: str | None = None, *, dry_run: bool = False) -> CalibrateReport:
    """Fit the estimate's efficiencies to the store's GPU verdicts, per GPU model (`gpu`: that model alone), and
    store each fit unless `dry_run`. A model with fewer than `MIN_KERNELS` kernels is refused, with its count.

    Raises:
        ConfigError: `gpu` names no GPU of the table.
        RequestError: the store holds no verdict of `gpu` (or none of any GPU) to fit on.
    """
    wanted: GpuSpec | None = gpu_spec(gpu) if gpu is not None else None
    verdicts, unrecorded = svc.store.timed_verdicts()
    by_gpu, report = timed_kernels(verdicts)
    report.unrecorded += unrecorded
    if wanted is not None:
        by_gpu = {wanted.name: by_gpu.get(wanted.name, [])}
    if not by_gpu:
        raise RequestError(_nothing_to_fit(svc, report), cli=_nothing_to_fit(svc, report))
    for name, kernels in sorted(by_gpu.items()):
        outcome = GpuOutcome(gpu=name, kernels=len(kernels))
        report.outcomes.append(outcome)
        if len(kernels) < MIN_KERNELS:
            outcome.refused = (
                f"{len(kernels)} correct {name} kernel(s) with what they launch recorded; a calibration needs at "
                f"least {MIN_KERNELS}: evaluate more kernels on an {name} with this store (`adaexplore explore`, "
                "`adaexplore bench`), then calibrate again"
            )
            continue
        fit = refit(kernels, gpu_spec(name))
        outcome.calibration = GpuCalibration(
            gpu=name,
            factors=fit.factors,
            kernels=fit.kernels,
            problems=fit.problems,
            held_out=fit.held_out,
            error_before=fit.error_before,
            error_after=fit.error_after,
            speedup_error_before=fit.speedup_error_before,
            speedup_error_after=fit.speedup_error_after,
        )
        if not worth_keeping(fit):  # a fit no better on verdicts it did not see is not kept
            outcome.refused = (
                f"the fit did not beat adaexplore's own efficiencies on held-out verdicts by {_MARGIN:.0%} ("
                f"{fit.held_out}: median |log(estimate/measured)| of kernel times {fit.error_before:.3f} -> "
                f"{fit.error_after:.3f}); "
                "not stored, the package's efficiencies stay in force for this GPU"
            )
            continue
        if not dry_run:
            outcome.calibration = svc.store.put_calibration(outcome.calibration)
            report.stored = True
    return report


def worth_keeping(fit: Refit) -> bool:
    """Whether a fit beats the package's efficiencies on held-out verdicts by more than noise: its error on kernel
    times lower by `_MARGIN`."""
    return fit.error_after <= (1 - _MARGIN) * fit.error_before


def _nothing_to_fit(svc: Services, report: CalibrateReport) -> str:
    text = f"the store {svc.store.where} holds no correct kernel a GPU timed with what it launches recorded"
    if report.unrecorded:
        text += (
            f" ({report.unrecorded} timed kernel(s) lack that record: stored before adaexplore kept it, or not "
            "followed to the end of their forward at full size)"
        )
    if report.unknown_gpus:
        text += f" (verdicts of GPUs the table lacks: {', '.join(sorted(report.unknown_gpus))})"
    return text + "; evaluate kernels on a GPU with this store first (`adaexplore explore` on the GPU machine)"


def calibrations_in_force(svc: Services) -> list[GpuCalibration]:
    """The latest calibration of each GPU model in the store (a stale one, fitted against another version's
    efficiencies, is listed but not used: `GpuCalibration.current`)."""
    return svc.store.calibrations()


def stored_calibrations(settings: Settings) -> list[GpuCalibration]:
    """The calibrations of the store the settings name, for an evaluation outside any run (`adaexplore profile`);
    none where there is no store yet (none is made) or it cannot be read (the estimate then uses the package's
    efficiencies, and says so by naming no calibration)."""
    if not store_exists(settings.database_url):
        return []
    try:
        store = open_store(settings.database_url)
    except AdaexploreError:
        return []
    try:
        return store.calibrations()
    finally:
        store.close()
