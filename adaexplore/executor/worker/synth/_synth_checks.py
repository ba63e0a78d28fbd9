"""Task synthesis: the checks of a task source (`check_source`), in this order; the first failure is the
rejection reason:
  (f) the source passes `adaexplore.executor.task_from_source` and has `SMALL_SIZES`;
  at small sizes, CPU, float32, one thread, init seed 0, inputs from seeds 1 and 2, warnings as errors:
  (-) nothing raises, the output is one floating-point tensor, the inputs are left unchanged;
  (a) deterministic: forward draws nothing from the global RNG, two forwards of one model are
      `torch.equal`, and so is a second model built under the same seed;
  (d) the output is finite;
  (c) magnitude against KernelBench's tolerance (atol = rtol = 1e-2): rms >= 0.1 (ten times atol), and
      at most 70% of the values are within atol of zero (ReLU gives about 50%);
  (b) depends on the input: between two random inputs the rms of the change is >= 5% of the output rms,
      and >= 10% of the elements change by more than the tolerance;
  (e) at GPU sizes on the meta device (nothing allocated): it runs, has the same output rank, and inputs
      and output hold at most 256 Mi elements each;
  (c, b, d again) "wide": GPU sizes except the narrow names (batch, height, width: kept small) -- a
      softmax or normalize over 4096 features is tiny there though fine at 300 -- if that costs at most
      64 Mi elements of inputs, parameters and output.

The tolerance and the seeds are the catalogue's probe's too (`_synth_catalogue`).
"""

from __future__ import annotations

import types
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

from adaexplore.domain import SizeValue
from adaexplore.errors import TaskError
from adaexplore.executor.tasks._task import task_from_source

__all__ = [
    "ATOL",
    "INIT_SEED",
    "RTOL",
    "Reject",
    "check_source",
    "first_line",
    "seed_cpu",
]

ATOL = RTOL = 1e-2
MIN_RMS = 0.1
NEAR_ZERO = ATOL
MAX_NEAR_ZERO_FRACTION = 0.7
MIN_RELATIVE_CHANGE = 0.05
MIN_CHANGED_FRACTION = 0.1
MAX_GPU_ELEMENTS = 256 * 2**20
MAX_WIDE_ELEMENTS = 64 * 2**20
DEFAULT_NARROW = ("batch_size", "batch", "height", "width", "depth", "rows", "seq_len", "length")

INIT_SEED, INPUT_SEED, OTHER_INPUT_SEED = 0, 1, 2


def seed_cpu(seed: int) -> None:
    """Seed the CPU generator (all this worker uses): `torch.manual_seed` also queues a seeding of every
    accelerator backend, with a captured stack each time, which costs a millisecond a call."""
    torch.default_generator.manual_seed(seed)


def first_line(exc: BaseException) -> str:
    """`exc` as its type's name and the first line of its message (200 characters at most)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200] if text else ''}".rstrip(": ")


class Reject(Exception):
    """A check failed; the message is the reason."""


def _module(source: str, sizes: Mapping[str, SizeValue] | None) -> types.ModuleType:
    module = types.ModuleType("adaexplore_synth_task")
    exec(compile(source, "<synthesized task>", "exec"), module.__dict__)
    for name, value in (sizes or {}).items():
        if name not in module.__dict__:
            raise Reject(f"SMALL_SIZES names {name!r}, which the task module does not define")
        module.__dict__[name] = value
    return module


def _inputs(module: types.ModuleType, seed: int) -> list[Any]:
    seed_cpu(seed)
    return list(module.get_inputs())


def _model(module: types.ModuleType) -> Any:
    seed_cpu(INIT_SEED)
    init = list(module.get_init_inputs())
    seed_cpu(INIT_SEED)
    return module.Model(*init)


def _clone(values: list[Any]) -> list[Any]:
    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]


def _same(a: list[Any], b: list[Any]) -> bool:
    return all(torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y for x, y in zip(a, b, strict=True))


def _output(out: Any) -> torch.Tensor:
    if not isinstance(out, torch.Tensor) or not out.is_floating_point():
        raise Reject("output is not a single floating-point tensor")
    return out


def _magnitude(out: torch.Tensor, where: str) -> dict[str, float]:
    y = out.detach().double()
    if not torch.isfinite(y).all():
        raise Reject(f"output is not finite{where}")
    rms = float(y.square().mean().sqrt())
    near_zero = float((y.abs() < NEAR_ZERO).double().mean())
    if rms < MIN_RMS:
        raise Reject(f"output too small (rms {rms:.1e}{where}; needs at least {MIN_RMS:g})")
    if near_zero > MAX_NEAR_ZERO_FRACTION:
        raise Reject(
            f"output mostly near zero ({near_zero:.0%} of values within {NEAR_ZERO:g} of zero{where}; "
            f"at most {MAX_NEAR_ZERO_FRACTION:.0%})"
        )
    return {"rms": rms, "near_zero_fraction": near_zero}


def _dependence(a: torch.Tensor, b: torch.Tensor, where: str) -> float:
    a, b = a.detach().double(), b.detach().double()
    if not torch.isfinite(b).all():
        raise Reject(f"output is not finite{where}")
    scale = max(float(a.square().mean().sqrt()), float(b.square().mean().sqrt()))
    change = float((a - b).square().mean().sqrt()) / scale if scale > 0 else 0.0
    changed = float(((a - b).abs() > ATOL + RTOL * b.abs()).double().mean())
    if change < MIN_RELATIVE_CHANGE or changed < MIN_CHANGED_FRACTION:
        raise Reject(
            f"output does not depend on the input (between two random inputs the output changes by "
            f"{change:.1e} relative rms and {changed:.0%} of elements move beyond the tolerance{where}; "
            f"needs {MIN_RELATIVE_CHANGE:g} and {MIN_CHANGED_FRACTION:.0%})"
        )
    return change


def _numel(values: Any) -> int:
    if isinstance(values, torch.Tensor):
        return values.numel()
    if isinstance(values, list | tuple):
        return sum(_numel(v) for v in values)
    return 0


def check_source(source: str, narrow: list[str] | None = None, name: str = "task") -> dict[str, Any]:
    """The verdict on a task source: {"ok", "reason", and what was measured}."""
    stats: dict[str, Any] = {}
    try:
        _check(source, list(DEFAULT_NARROW) if narrow is None else narrow, name, stats)
    except Reject as exc:
        return {"ok": False, "reason": str(exc), **stats}
    return {"ok": True, "reason": None, **stats}


@contextmanager
def _phase(where: str) -> Iterator[None]:
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("error")
            yield
    except Reject:
        raise
    except Exception as exc:
        raise Reject(f"raised {first_line(exc)}{where}") from exc


def _check(source: str, narrow: list[str], name: str, stats: dict[str, Any]) -> None:
    try:
        task = task_from_source(source, name)
    except TaskError as exc:
        raise Reject(f"does not load as a task: {exc}") from exc
    if not task.small_sizes:
        raise Reject("has no SMALL_SIZES for CPU checks")
    with _phase(""):
        module = _module(source, task.small_sizes)
        inputs = _inputs(module, INPUT_SEED)
        others = _inputs(module, OTHER_INPUT_SEED)
        first, second = _model(module), _model(module)
        given = _clone(inputs)
        state = torch.get_rng_state()
        out = _output(first(*given))
        drew = not torch.equal(state, torch.get_rng_state())
        if not _same(given, inputs):
            raise Reject("modifies its input in place")
        stats["output_shape"] = list(out.shape)
        if drew:
            raise Reject("not deterministic (forward draws from the global random number generator)")
        if not torch.equal(out, _output(first(*_clone(inputs)))):
            raise Reject("not deterministic (two forward calls of one model differ)")
        if not torch.equal(out, _output(second(*_clone(inputs)))):
            raise Reject("not deterministic (two models built under one seed differ)")
        stats.update(_magnitude(out, ""))
        stats["relative_change"] = _dependence(out, _output(first(*others)), "")
    with _phase(" (at GPU sizes, on the meta device)"), torch.device("meta"):
        module = _module(source, None)
        gpu_inputs = _inputs(module, INPUT_SEED)
        gpu_model = _model(module)
        gpu_out = _output(gpu_model(*gpu_inputs))
        stats["gpu_output_shape"] = list(gpu_out.shape)
        if gpu_out.dim() != out.dim():
            raise Reject(f"output rank differs at GPU sizes ({gpu_out.dim()}, {out.dim()} at small sizes)")
        biggest = max([gpu_out.numel(), *(_numel(v) for v in gpu_inputs)])
        if biggest > MAX_GPU_ELEMENTS:
            raise Reject(f"too large at GPU sizes ({biggest} elements in one tensor; at most {MAX_GPU_ELEMENTS})")
    wide = {n: v for n, v in task.small_sizes.items() if n in narrow}
    with _phase(" (at GPU widths, on the meta device)"), torch.device("meta"):
        module = _module(source, wide)
        meta_inputs = _inputs(module, INPUT_SEED)
        meta_model = _model(module)
        cost = _numel(meta_inputs) + _numel(meta_model(*meta_inputs))
        cost += sum(p.numel() for p in meta_model.parameters()) if isinstance(meta_model, nn.Module) else 0
    if cost > MAX_WIDE_ELEMENTS:
        return
    where = " at GPU widths"
    with _phase(" (at GPU widths)"):
        module = _module(source, wide)
        model = _model(module)
        wide_out = _output(model(*_inputs(module, INPUT_SEED)))
        wide_stats = _magnitude(wide_out, where)
        stats["wide_rms"] = wide_stats["rms"]
        _dependence(wide_out, _output(model(*_inputs(module, OTHER_INPUT_SEED))), where)
