"""The precision paragraph of the step instructions: a run's tolerance for float32 outputs, from its mode's
numbers, and which float32 `tl.dot` precisions sit well within it."""

from __future__ import annotations

from adaexplore.executor import Mode, mode_spec, tolerance_for
from adaexplore.prompts import PrecisionContext

__all__ = ["precision_context"]

# Relative errors of a float32 `tl.dot` against float64, measured on an H200 (64x64x64, Triton 3.6):
# (largest elementwise, normwise). `tf32` keeps 10 mantissa bits of each operand; `tf32x3` adds the
# products of the low parts and lands with `ieee` (2.6e-7 elementwise) near float32 rounding.
_DOT_ERROR = {"tf32": (7.1e-4, 3e-4), "tf32x3": (2.3e-7, 1e-6)}
# A precision counts as passing only when its error fits this many times over, so that larger sums and
# other inputs keep passing.
_MARGIN = 3.0


def _passes(name: str, kind: str, atol: float, rtol: float, norm_rtol: float | None) -> bool:
    elementwise, normwise = _DOT_ERROR[name]
    # for values near the output's scale, both terms count (under "either", the larger one alone)
    if elementwise * _MARGIN > (max(atol, rtol) if kind == "either" else atol + rtol):
        return False
    return norm_rtol is None or normwise * _MARGIN <= norm_rtol


def precision_context(
    mode: str, allowed_precision: str | None, task_tolerance: dict[str, float] | None = None
) -> PrecisionContext:
    """The tolerance a run in `mode` holds float32 outputs to (loosened by the task's ALLOWED_PRECISION; in mode
    flashinfer, the task's own TOLERANCE)."""
    tolerance = tolerance_for(Mode(mode), "float32", allowed_precision, task_tolerance)
    spec = mode_spec(Mode(mode))
    return PrecisionContext(
        mode=mode,
        reference_dtype=tolerance.reference_dtype,
        kind=tolerance.kind,
        atol=tolerance.atol,
        rtol=tolerance.rtol,
        norm_rtol=tolerance.norm_rtol,
        tf32_error=_DOT_ERROR["tf32"][0],
        tf32x3_error=_DOT_ERROR["tf32x3"][0],
        tf32_passes=_passes("tf32", tolerance.kind, tolerance.atol, tolerance.rtol, tolerance.norm_rtol),
        tf32x3_passes=_passes("tf32x3", tolerance.kind, tolerance.atol, tolerance.rtol, tolerance.norm_rtol),
        tf32_matmul=spec.allow_tf32_matmul,
        tf32_cudnn=spec.allow_tf32_cudnn,
    )
