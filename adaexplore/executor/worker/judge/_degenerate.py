"""Is a task degenerate where its reference runs: is an output a constant, float32 rounding noise, or blind to its
inputs? Decided from the reference alone, in its own dtype and in float64, on two draws of its inputs, under
strict's tolerance for the output's dtype (the tightest a verdict uses), so the answer does not depend on the mode.

- `constant`: one value (zero, or the float64 output's mean) passes the tolerance against the float64 output of
  both draws: a kernel that writes it is correct.
- `noise`: PyTorch's own reference in the task's dtype misses the float64 one by more than the tolerance, and by at
  least as much as the best constant does: what it computes is rounding noise (a GroupNorm over groups of one
  channel, the mean of a normalized tensor), and only widening the tolerance past a constant lets it pass.
- `input_blind`: two draws whose inputs differ give float64 outputs that agree within the tolerance.

The size probe (`_size_probe.py`) refuses candidate sizes where a task is degenerate; the judge
(`_reference_build.py`) names a task degenerate at the sizes it runs, or at full size where the CPU can afford it.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any, Literal

import torch

from adaexplore.domain import AuditFlag, Degeneracy, Mode, Tolerance
from adaexplore.executor.tasks._small_sizes import FULL_CHECK_BUDGET_S, FULL_CHECK_MEMORY
from adaexplore.executor.wire._modes import tolerance_for
from adaexplore.executor.worker.judge._compare import compare
from adaexplore.executor.worker.task._taskrun import (
    build_model,
    flatten_output,
    make_args,
    tensors_in,
    upcast,
    upcast_copy,
)
from adaexplore.roofline import OpWork, TaskWork

__all__ = [
    "DRAW_SEEDS",
    "check_cost_s",
    "check_memory",
    "constant_excess",
    "excess",
    "full_check_fits",
    "outputs_degeneracy",
    "reference_degeneracy",
    "same_inputs",
]

DRAW_SEEDS = (1, 2)  # the two draws of the inputs a check compares
_SAMPLED = 1 << 20  # the most elements of an output a check compares
# conservative CPU rates for that estimate, measured on two cores: float64 matrix products and convolutions run at
# about 20 GFLOP/s, element-wise operators and drawing inputs at about 1 GB/s
_CPU_FLOPS = 15e9
_CPU_BYTES = 1e9


def excess(out: torch.Tensor, ref: torch.Tensor, tol: Tolerance) -> float:
    """How many times over the tolerance `out` is against `ref` (<= 1 passes), the worst of its element-wise and
    normwise errors."""
    result = compare(out, ref, tol)
    ratios = [result.max_scaled_error if result.max_scaled_error is not None else float("inf")]
    if tol.norm_rtol and result.norm_rel_error is not None:
        ratios.append(result.norm_rel_error / tol.norm_rtol)
    elif tol.norm_rtol and not result.passed:
        ratios.append(float("inf"))
    return max(ratios)


def _constants(ref: torch.Tensor) -> list[float]:
    """The constants a kernel could write in place of `ref`: zero, and the mean of its finite values."""
    if ref.is_complex() or not ref.is_floating_point() or ref.numel() == 0:
        return [0.0]
    finite = ref[torch.isfinite(ref)]
    return [0.0, float(finite.mean())] if finite.numel() else [0.0]


def constant_excess(ref: torch.Tensor, tol: Tolerance) -> tuple[float, float]:
    """The best constant a kernel could write in place of `ref` and how many times over the tolerance it is."""
    best = (0.0, float("inf"))
    for value in _constants(ref):
        miss = excess(torch.full_like(ref, value), ref, tol)
        if miss < best[1]:
            best = (value, miss)
    return best


def _output_degeneracy(
    native: torch.Tensor, exact: torch.Tensor, other: torch.Tensor | None, *, noise: bool
) -> tuple[str, float | None] | None:
    """(kind, value) where one output is degenerate, else None; `other`: the float64 output of a second draw whose
    inputs differ (None where the draws are the same); `noise`: whether the float32-against-float64 test applies
    (not for a reference that is not deterministic)."""
    if not (exact.is_floating_point() or exact.is_complex()):
        same = other is None or torch.equal(other, exact)
        if exact.numel() > 1 and bool((exact == exact.flatten()[0]).all()) and same:
            return "constant", float(exact.flatten()[0])
        return ("input_blind", None) if other is not None and same else None
    tol = tolerance_for(Mode.strict, str(native.dtype).removeprefix("torch."))
    value, miss = constant_excess(exact, tol)
    if exact.numel() > 1 and miss <= 1.0:
        if other is None or excess(torch.full_like(other, value), other, tol) <= 1.0:
            return "constant", value
    if noise and native.shape == exact.shape:
        own = excess(native.to(exact.dtype), exact, tol)
        if own > 1.0 and own >= miss:
            return "noise", 0.0
    if other is not None and compare(other, exact, tol).passed:
        return "input_blind", None
    return None


def outputs_degeneracy(
    native: list[torch.Tensor],
    exact: list[torch.Tensor],
    other: list[torch.Tensor] | None,
    sizes: str,
    *,
    noise: bool = True,
) -> Degeneracy | None:
    """The first degenerate output of a reference: `native` its outputs in the task's dtype for one draw, `exact`
    the float64 outputs of that draw, `other` those of a second draw whose inputs differ (None: the draws are the
    same); `sizes` "full" or "small", where they were computed. An output of more than 2**20 elements is judged
    on 2**20 of them, evenly spaced (a constant, noise or a blind output is so on any large part of it)."""
    for j, (out, ref) in enumerate(zip(native, exact, strict=True)):
        second = _sample(other[j]) if other is not None else None
        found = _output_degeneracy(_sample(out), _sample(ref), second, noise=noise)
        if found is not None:
            kind, value = found
            return Degeneracy.model_validate(
                {"kind": kind, "output": j, "outputs": len(exact), "value": value, "sizes": sizes}
            )
    return None


def _sample(t: torch.Tensor) -> torch.Tensor:
    flat = t.reshape(-1)
    step = -(-flat.numel() // _SAMPLED)
    return flat[::step] if step > 1 else flat


def _forward(model: torch.nn.Module, args: list[Any], seed: int) -> list[torch.Tensor]:
    torch.manual_seed(seed)  # a dropout draws the same mask in both precisions
    with torch.no_grad():
        return [t.detach() for t in flatten_output(model(*args))]


def same_inputs(a: list[Any], b: list[Any]) -> bool:
    ta, tb = tensors_in(a), tensors_in(b)
    return len(ta) == len(tb) and all(x.shape == y.shape and torch.equal(x, y) for x, y in zip(ta, tb, strict=True))


def reference_degeneracy(
    module: ModuleType,
    device: torch.device,
    sizes: str,
    *,
    init_seed: int = 42,
    cast: torch.dtype | None = None,
    model: torch.nn.Module | None = None,
    first: tuple[list[Any], list[torch.Tensor]] | None = None,
    on_device: bool = False,
    precise: bool = True,
) -> Degeneracy | None:
    """Build the task's Model (or take `model`, built from `module`), draw its inputs twice and run it in its own
    dtype and in float64: the first degenerate output, else None. `first`: inputs already drawn and the outputs
    `model` gave for them, run after `torch.manual_seed(DRAW_SEEDS[0])`, to stand for the first draw. `on_device`:
    draw the weights and inputs on a CUDA `device` itself, as strict mode does there. `precise` False: in the
    task's dtype alone, which finds a constant or a blind output but not rounding noise, at a third of the cost.

    Raises:
        TaskFault: the task's functions failed; what its forward raises, as it raised it.
    """
    if model is None:
        init = make_args(module, "get_init_inputs", init_seed, device, cast, on_device=on_device)
        model = build_model(module.Model, init, init_seed, device, cast, on_device=on_device)
    if first is None:
        draws = [make_args(module, "get_inputs", seed, device, cast, on_device=on_device) for seed in DRAW_SEEDS]
        native = _forward(model, draws[0], DRAW_SEEDS[0])
    else:
        draws = [first[0], make_args(module, "get_inputs", DRAW_SEEDS[1], device, cast, on_device=on_device)]
        native = first[1]
    differ = not same_inputs(draws[0], draws[1])
    if not precise:
        other = _forward(model, draws[1], DRAW_SEEDS[0]) if differ else None
        return outputs_degeneracy(native, native, other, sizes, noise=False)
    exact_model = upcast_copy(model)
    exact = _forward(exact_model, upcast(draws[0]), DRAW_SEEDS[0])
    other = None
    if differ:
        # the second draw under the first's seed: a dropout masks the same elements, so only the inputs differ
        other = _forward(exact_model, upcast(draws[1]), DRAW_SEEDS[0])
    return outputs_degeneracy(native, exact, other, sizes)


def check_cost_s(work: TaskWork | None) -> float | None:
    """The CPU seconds a check of the task at its full sizes may take, from what its reference does there (the
    FLOPs of its matrix products and convolutions, the bytes its operators move, its inputs drawn twice); None
    where the record is missing or incomplete."""
    if work is None or not work.forward.complete:
        return None
    flops = sum(s.flops for s in work.forward.steps if isinstance(s, OpWork))
    moved = sum(s.bytes_read + s.bytes_written for s in work.forward.steps if isinstance(s, OpWork))
    # two forwards in the task's dtype and two in float64 (twice the bytes, at about half the rate)
    forward_s = flops / _CPU_FLOPS + moved / _CPU_BYTES
    return 2 * forward_s + 2 * 2.5 * forward_s + 2 * work.input_bytes / _CPU_BYTES + work.parameter_bytes / _CPU_BYTES


def check_memory(work: TaskWork | None) -> float | None:
    """The bytes a check of the task at its full sizes may hold at once: two draws of the inputs in the task's dtype
    and in float64, the parameters in both, the outputs of three forwards (two in float64), and the largest
    operator's output again in float64; None where the record is missing or incomplete."""
    if work is None or not work.forward.complete:
        return None
    largest = max((s.bytes_written for s in work.forward.steps if isinstance(s, OpWork)), default=0.0)
    return 6 * work.input_bytes + 3 * work.parameter_bytes + 5 * work.output_bytes + 4 * largest


def full_check_fits(
    work: TaskWork | None, budget_s: float = FULL_CHECK_BUDGET_S, memory: float = FULL_CHECK_MEMORY
) -> tuple[bool, str]:
    """Whether a check at full size is expected to take at most `budget_s` CPU seconds and `memory` bytes, and if
    not, why not."""
    cost, held = check_cost_s(work), check_memory(work)
    if cost is None or held is None:
        return False, "its cost is not known (its reference could not be followed on shape-only tensors)"
    if cost > budget_s:
        return False, f"about {cost:.0f} CPU s, more than the {budget_s:g} s a check may take here"
    if held > memory:
        return False, f"about {held / 2**30:.1f} GiB, more than the {memory / 2**30:.1f} GiB a check may hold here"
    return True, ""


@dataclass
class Degeneracies:
    """What the judge found of a task's degeneracy: at the sizes it runs, and at full size where it checked."""

    sizes: Literal["full", "small"]  # the sizes the judge runs
    at_sizes: Degeneracy | None
    at_full: Degeneracy | None = None
    full_checked: bool = False
    undecided: bool = False  # the reference could not be run in float64 here

    @property
    def checked(self) -> Literal["full", "small"] | None:
        """Where the task's degeneracy was decided: "full" or "small" (None: it was not)."""
        if self.undecided:
            return None
        return "full" if self.full_checked or self.sizes == "full" else "small"

    def named(self) -> tuple[Degeneracy | None, Degeneracy | None]:
        """(the task's degeneracy, the small sizes' where the full sizes keep the task)."""
        if self.full_checked:
            return self.at_full, self.at_sizes if self.at_full is None else None
        return self.at_sizes, None

    def flags(self) -> list[AuditFlag]:
        task, sizes = self.named()
        flags = []
        if task is not None:
            flags.append(AuditFlag(code="degenerate_task", severity="warn", message=task.line()))
        if sizes is not None:
            flags.append(
                AuditFlag(
                    code="degenerate_sizes",
                    severity="warn",
                    message=f"at the small sizes the checks run at, {sizes.what()}, though at its full sizes it does "
                    "not: these checks cannot tell a kernel that writes one value from a correct one; give other "
                    "small sizes, or check at the full sizes",
                )
            )
        return flags
