"""Comparing an output with its reference under a tolerance (runs in the judge, never in a candidate)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from adaexplore.domain import Tolerance

__all__ = ["Comparison", "compare"]


@dataclass
class Comparison:
    passed: bool
    max_abs_error: float | None
    # The worst element's error as a share of the error it is allowed (<= 1 passes).
    max_scaled_error: float | None
    norm_rel_error: float | None
    message: str | None
    norm_rel_spread: float | None = None


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def compare(
    out: torch.Tensor, ref: torch.Tensor, tol: Tolerance, *, allowance: float = 1.0, spread: bool = False
) -> Comparison:
    """Compare `out` with `ref` (same shape). `allowance` > 1 widens the tolerance, used where the task's
    own PyTorch reference misses the tolerance by that much. `spread`: also say how far the normwise error may
    stray from that of a larger draw of the same outputs (`norm_rel_spread`)."""
    if out.shape != ref.shape:
        return Comparison(
            False, None, None, None, f"output shape {tuple(out.shape)} differs from the reference's {tuple(ref.shape)}"
        )
    if not ref.is_floating_point() and not ref.is_complex():
        equal = torch.equal(out.to(ref.dtype), ref)
        wrong = int((out.to(ref.dtype) != ref).sum())
        return Comparison(
            equal, None, None, None, None if equal else f"{wrong} of {ref.numel()} elements differ (integer output)"
        )
    complex_parts = ref.is_complex()
    if complex_parts:
        # real and imaginary parts, each held to the tolerance (a cast to float64 would drop the imaginary part)
        if not out.is_complex():
            return Comparison(False, None, None, None, f"output is {out.dtype}, not complex like the reference")
        out, ref = torch.view_as_real(out.to(ref.dtype)), torch.view_as_real(ref)
    o = out.to(torch.float64)
    r = ref.to(torch.float64)
    if o.numel() == 0:
        return Comparison(True, 0.0, 0.0, 0.0, None)
    # Non-finite reference values must be matched exactly (NaN where NaN, the same infinity).
    ref_nan, out_nan = torch.isnan(r), torch.isnan(o)
    ref_inf, out_inf = torch.isinf(r), torch.isinf(o)
    bad_special = (ref_nan != out_nan) | (ref_inf != out_inf) | (ref_inf & out_inf & (r != o))
    finite = ~(ref_nan | ref_inf)
    rf, of = r[finite], o[finite]
    diff = (of - rf).abs()
    max_abs = float(diff.max()) if diff.numel() else 0.0
    ref_norm = float(rf.norm()) if rf.numel() else 0.0
    norm_rel = float((of - rf).norm()) / ref_norm if ref_norm > 0 else (0.0 if max_abs == 0 else math.inf)
    atol, rtol = tol.atol * allowance, tol.rtol * allowance
    if tol.kind == "scaled":
        rms = ref_norm / math.sqrt(rf.numel()) if rf.numel() else 0.0
        allowed = atol * rms + rtol * rf.abs()
    elif tol.kind == "either":
        # FlashInfer-Bench's rule: an element fails where |out-ref| > atol and |out-ref| / (|ref| + 1e-8) > rtol
        allowed = torch.maximum(torch.full_like(rf, atol), rtol * (rf.abs() + 1e-8))
    else:
        allowed = atol + rtol * rf.abs()
    if diff.numel():
        scaled = torch.where(
            allowed > 0,
            diff / allowed.clamp_min(1e-300),
            torch.where(diff > 0, torch.full_like(diff, math.inf), torch.zeros_like(diff)),
        )
        max_scaled = float(scaled.max())
    else:
        max_scaled = 0.0
    special = int(bad_special.sum())
    problems = []
    if special:
        nan_out = int((out_nan & ~ref_nan).sum())
        problems.append(
            f"{nan_out} NaN where the reference is finite"
            if nan_out
            else f"{special} elements differ in NaN/inf from the reference"
        )
    if max_scaled > 1.0:
        worst = int(torch.argmax(scaled))
        index = [int(i) for i in torch.nonzero(finite)[worst]]
        # of a complex output, the element's index and which of its parts (the last index of the real view)
        where = f"{index[:-1]} ({('real', 'imaginary')[index[-1]]} part)" if complex_parts else f"{index}"
        counted = "real and imaginary parts" if complex_parts else "elements"
        problems.append(
            f"max |out-ref| = {max_abs:.3g} at index {where} (out {float(of[worst]):.6g}, "
            f"ref {float(rf[worst]):.6g}); {int((scaled > 1).sum())} of {rf.numel()} {counted} "
            f"exceed the tolerance"
        )
    if tol.norm_rtol is not None and norm_rel > tol.norm_rtol * allowance:
        problems.append(f"relative error ||out-ref||/||ref|| = {norm_rel:.3g} exceeds {tol.norm_rtol * allowance:.3g}")
    passed = not problems
    return Comparison(
        passed,
        _finite(max_abs),
        _finite(max_scaled),
        _finite(norm_rel),
        None if passed else "; ".join(problems),
        _norm_spread(torch.where(finite, o - r, 0.0), torch.where(finite, r, 0.0)) if spread and not special else None,
    )


# the blocks each dimension is cut into for the jackknife of `_norm_spread`
_JACKKNIFE_BLOCKS = 8


def _norm_spread(error: torch.Tensor, ref: torch.Tensor) -> float | None:
    """The standard error of ||error||/||ref|| as an estimate of its value over a larger draw: a delete-a-block
    jackknife along each dimension in turn (the outputs of a row, or of a column, share what they were computed
    from, so a dimension's few values can weigh more than the elements' count says), the largest of them."""
    e2, r2 = error.square(), ref.square()
    spreads = []
    for dim, size in enumerate(error.shape):
        blocks = min(_JACKKNIFE_BLOCKS, size)
        if blocks < 2:
            continue
        dims = [d for d in range(error.dim()) if d != dim]
        per_e = e2.sum(dim=dims) if dims else e2
        per_r = r2.sum(dim=dims) if dims else r2
        cut_e = torch.stack([c.sum() for c in per_e.tensor_split(blocks)])
        cut_r = torch.stack([c.sum() for c in per_r.tensor_split(blocks)])
        rest_r = cut_r.sum() - cut_r
        if bool((rest_r <= 0).any()):
            continue
        left_out = ((cut_e.sum() - cut_e) / rest_r).sqrt()
        spreads.append(float(((blocks - 1) / blocks * (left_out - left_out.mean()).square().sum()).sqrt()))
    return _finite(max(spreads)) if spreads else None
