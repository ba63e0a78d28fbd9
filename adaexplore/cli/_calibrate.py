"""`adaexplore calibrate [--gpu NAME] [--dry-run]`: the estimate refitted to the store's GPU verdicts, per GPU model,
and stored there for every later estimate of that model (on this machine or any other that reads the store)."""

from __future__ import annotations

import argparse

from adaexplore import tools
from adaexplore.cli._options import EXIT_OK, OneLineErrors
from adaexplore.config import Settings
from adaexplore.errors import NotFoundError, RequestError

__all__ = ["add_calibrate_parser", "run_calibrate"]

_GROUPS = {
    "tensor_cores": "tensor cores",
    "cuda_cores": "CUDA cores",
    "memory": "memory",
    "library_compute": "library compute",
    "library_memory": "library memory",
}


def add_calibrate_parser(commands: argparse._SubParsersAction[OneLineErrors]) -> None:
    calibrate = commands.add_parser(
        "calibrate",
        help="fit the estimate's efficiencies to the GPU verdicts in the store, per GPU model",
        description="Fit the performance estimate to the kernels a GPU timed in this store: five factors on its "
        "efficiencies (tensor cores, CUDA cores, memory, PyTorch's compute and memory-bound libraries) per GPU "
        f"model, from at least {tools.MIN_CALIBRATION_KERNELS} kernels. It prints the kernels read and the "
        "median |log(estimate/measured)| of kernel times before and after on verdicts the fit did not see (each "
        "problem left out in turn), and stores the calibration: every later estimate for that GPU model, on any "
        "machine that reads this store, uses it and names it. A fit not 5 percent better on held-out verdicts is "
        "not stored.",
    )
    calibrate.add_argument(
        "--gpu", metavar="NAME", type=tools.check_target_gpu, help="that GPU model alone (default: every one)"
    )
    calibrate.add_argument("--dry-run", action="store_true", help="fit and report, store nothing")


def run_calibrate(args: argparse.Namespace, settings: Settings) -> int:
    """Fit, report and store.

    Raises:
        NotFoundError: there is no database.
        RequestError: nothing to fit, or every GPU model has too few kernels.
    """
    if not tools.database_exists(settings):  # calibrating creates no database
        raise NotFoundError(
            f"there is no database at {tools.database_label(settings)}: calibrate reads the GPU verdicts of a "
            "store; set ADAEXPLORE_DB or ADAEXPLORE_HOME (or --home) to the one your GPU machine writes"
        )
    with tools.open_reader(settings) as svc:
        report = tools.calibrate(svc, args.gpu, dry_run=args.dry_run)
        where = svc.store.where
    lines = []
    for outcome in report.outcomes:
        fitted = outcome.calibration
        if fitted is None or outcome.refused:
            lines.append(f"{outcome.gpu}: not calibrated: {outcome.refused}")
            continue
        change = 1 - fitted.error_after / fitted.error_before if fitted.error_before else 0.0
        lines.append(f"{fitted.gpu}: {fitted.kernels} kernels of {fitted.problems} problems")
        lines.append(
            f"  held out ({fitted.held_out}): median |log(estimate/measured)| of kernel times "
            f"{fitted.error_before:.3f} -> {fitted.error_after:.3f} ({change:.0%} lower)"
        )
        if fitted.speedup_error_before is not None and fitted.speedup_error_after is not None:
            lines.append(
                f"  and of speedups over eager PyTorch {fitted.speedup_error_before:.3f} -> "
                f"{fitted.speedup_error_after:.3f}"
            )
        factors = ", ".join(f"{_GROUPS.get(g, g)} {v:.3g}" for g, v in fitted.factors.items())
        lines.append(f"  factors on adaexplore's efficiencies: {factors}")
        if fitted.id is not None:
            lines.append(f"  stored as {fitted.label()} in {where}: every later {fitted.gpu} estimate uses it")
        else:
            lines.append("  not stored (--dry-run)")
    if report.unrecorded:
        lines.append(
            f"{report.unrecorded} timed kernel(s) left out: what they launch at full size was not recorded (stored "
            "before adaexplore kept it, or not followed to its end)"
        )
    for device, count in sorted(report.unknown_gpus.items()):
        lines.append(f"{count} timed kernel(s) of {device} left out: the GPU table has no peaks for it")
    print("\n".join(lines))
    if not any(o.calibration is not None and not o.refused for o in report.outcomes):
        raise RequestError("no GPU model was calibrated (see above)")
    return EXIT_OK
