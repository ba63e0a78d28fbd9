"""How the judge builds a reference: the task's module and models, the inputs, the outputs, the task's facts."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Literal, TypeVar

import torch

from adaexplore.domain import AuditFlag, Degeneracy, Mode, Tolerance
from adaexplore.executor.wire._modes import mode_spec, tolerance_for
from adaexplore.executor.wire._protocol import JobSpec
from adaexplore.executor.worker.confine._faults import TaskFault
from adaexplore.executor.worker.judge._compare import compare
from adaexplore.executor.worker.judge._degenerate import (
    Degeneracies,
    constant_excess,
    excess,
    full_check_fits,
    outputs_degeneracy,
    reference_degeneracy,
    same_inputs,
)
from adaexplore.executor.worker.judge._draws import DrawReport, draw_side_by_side
from adaexplore.executor.worker.judge._random_forward import other_seed, random_forward_flag
from adaexplore.executor.worker.judge._references import Reference
from adaexplore.executor.worker.task._taskrun import (
    build_model,
    clone_args,
    draw_args,
    flatten_output,
    load_task_module,
    make_args,
    place_args,
    resolve_seeds,
    seed_forward,
    tensors_in,
    upcast,
    upcast_copy,
)
from adaexplore.roofline import TaskWork

__all__ = ["ReferenceBuilder"]

T = TypeVar("T")
_FULL_CHECK_MODULE = "adaexplore_task_full_check"


class ReferenceBuilder:
    """Runs the task's own code for the judge. It keeps each task's module, and what it learned of each task
    once (its facts do not depend on the seeds)."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self._modules: dict[tuple[str, str], ModuleType] = {}
        self._task_flags: dict[tuple[str, str, Mode], TaskFacts] = {}
        self._drawing: dict[tuple[str, str, Mode], AuditFlag | None] = {}  # per task: the flag of random draws
        # per task file and cast: the task checked at its full sizes (found, and whether it ran)
        self._full_degeneracy: dict[tuple[str, str | None], tuple[Degeneracy | None, bool]] = {}
        # how the last reference built drew its inputs
        self.last_draw = DrawReport()

    def inputs(self, ref: Reference, spec: JobSpec, seed: int) -> list[Any]:
        """`seed`'s inputs on the device: drawn now, or the copy drawn ahead with the reference's own."""
        ahead = ref.drawn.get(seed)
        if ahead:
            return ahead.pop()
        return make_args(ref.module, "get_inputs", seed, self.device, ref.cast, on_device=spec.generate_on_device)

    def module(self, spec: JobSpec) -> ModuleType:
        key = (spec.task_path, spec.sizes)
        if key not in self._modules:
            self._modules[key] = load_task_module(spec.task_path, spec.small_sizes if spec.sizes == "small" else None)
        return self._modules[key]

    def forward(self, model: torch.nn.Module, args: list[Any], seed: int | None = None) -> list[torch.Tensor]:
        """The model's outputs on `args`; with `seed`, every generator seeded with it right before (`seed_forward`:
        a trial's forward, which the candidate's of the same trial is seeded as)."""
        try:
            if seed is not None:
                seed_forward(seed)
            with torch.no_grad():
                out = model(*args)
            return [t.detach() for t in flatten_output(out)]
        except torch.OutOfMemoryError:
            raise
        except Exception as exc:
            raise TaskFault(f"the reference Model's forward raised {type(exc).__name__}: {exc}") from exc

    def build(self, spec: JobSpec) -> Reference:
        """The task's models and the inputs of every trial (on a GPU, of timing too), drawn side by side where
        drawing them takes long (`_draws`) while the model is built; `last_draw` says how."""
        mode = mode_spec(spec.mode)
        module = self.module(spec)
        cast = getattr(torch, spec.cast_floats_to) if spec.cast_floats_to else None
        init_seed, trial_seeds, timing_seed = resolve_seeds(spec)
        on_device = spec.generate_on_device
        # drawn ahead with the trials': timing's inputs (a GPU times the reference), and the first trial's again
        # for the task's facts, which run the reference on fresh inputs once per task
        ahead = [timing_seed] if self.device.type == "cuda" else []
        if (spec.task_path, spec.sizes, spec.mode) not in self._task_flags:
            ahead.append(trial_seeds[0])

        def model() -> torch.nn.Module:
            init_args = make_args(module, "get_init_inputs", init_seed, self.device, cast, on_device=on_device)
            try:
                return build_model(module.Model, init_args, init_seed, self.device, cast, on_device=on_device)
            except torch.OutOfMemoryError:
                raise
            except Exception as exc:
                raise TaskFault(f"Model(*get_init_inputs()) raised {type(exc).__name__}: {exc}") from exc

        placed, native = self.draw(module, [*trial_seeds, *ahead], cast, on_device=on_device, meanwhile=model)
        float64 = mode.reference_precision == "float64"
        ref = Reference(
            module=module,
            cast=cast,
            native=native,
            reference=upcast_copy(native) if float64 else native,
            float64=float64,
            init_seed=init_seed,
            trial_seeds=trial_seeds,
            timing_seed=timing_seed,
        )
        ref.inputs = placed[: len(trial_seeds)]
        for seed, values in zip(ahead, placed[len(trial_seeds) :], strict=True):
            ref.drawn.setdefault(seed, []).append(values)
        if self.device.type == "cuda":
            ref.timing_base = self.inputs(ref, spec, timing_seed)
        return ref

    def draw(
        self,
        module: ModuleType,
        seeds: list[int],
        cast: torch.dtype | None,
        *,
        on_device: bool,
        meanwhile: Callable[[], T],
    ) -> tuple[list[list[Any]], T]:
        """Each seed's inputs on the device, drawn side by side where the first took long (`_draws`), and what
        `meanwhile` returns, called while they are drawn; `last_draw` says how long the inputs took."""
        self.last_draw = report = DrawReport()
        start = time.perf_counter()
        first = draw_args(module, "get_inputs", seeds[0], self.device, on_device=on_device)
        drawn_s = time.perf_counter() - start
        drawing = None if on_device else draw_side_by_side(module, first, drawn_s, seeds[1:], report)
        try:
            made = meanwhile()
            start = time.perf_counter()
            placed = [place_args(first, self.device, cast)]
            del first
            if drawing is None:
                for seed in seeds[1:]:
                    placed.append(make_args(module, "get_inputs", seed, self.device, cast, on_device=on_device))
            else:
                placed += [[]] * (len(seeds) - 1)
                for index, values in drawing.collect():
                    placed[index + 1] = place_args(values, self.device, cast)
            report.seconds = drawn_s + time.perf_counter() - start
        finally:
            if drawing is not None:
                drawing.close()
        return placed, made

    def redraw(self, ref: Reference, spec: JobSpec) -> None:
        """The trials' inputs (and timing's) again, for a kept reference whose inputs a job dropped."""
        seeds = list(ref.trial_seeds) + ([ref.timing_seed] if ref.timing_base is None else [])
        placed, _ = self.draw(ref.module, seeds, ref.cast, on_device=spec.generate_on_device, meanwhile=lambda: None)
        ref.inputs = placed[: len(ref.trial_seeds)]
        if ref.timing_base is None:
            ref.timing_base = placed[-1]

    def compute(self, ref: Reference, spec: JobSpec, work: TaskWork | None = None) -> None:
        """The reference outputs of every trial, the tolerances, and the task's facts; `work`: what the reference
        does at full size, which says whether the CPU can afford to check the task there."""
        natives: list[list[torch.Tensor]] = []
        refs: list[list[torch.Tensor]] = []
        own_dtype: AuditFlag | None = None
        for seed, args in zip(ref.trial_seeds, ref.inputs, strict=True):
            native_out = self.forward(ref.native, args, seed)
            ref_out = native_out
            if ref.float64:
                try:
                    ref_out = self.forward(ref.reference, upcast(args), seed)
                except TaskFault as exc:  # the model fixes a dtype float64 cannot follow; it runs in its own
                    own_dtype = self._own_dtype(ref, exc)
                    refs = list(natives)
            natives.append(native_out)
            refs.append(ref_out)
        ref.refs = refs
        ref.dtypes = [t.dtype for t in natives[0]]
        ref.tolerances = [
            tolerance_for(spec.mode, str(d).removeprefix("torch."), spec.allowed_precision, spec.task_tolerance)
            for d in ref.dtypes
        ]
        drawing = self._random_forward(ref, spec, natives[0])
        if drawing is not None and ref.float64:  # a float64 copy draws other numbers: the task's own dtype
            ref.reference, ref.float64 = ref.native, False
            ref.refs = list(natives)
        flags: list[AuditFlag] = [drawing] if drawing is not None else []
        ref.allowance = [1.0] * len(ref.dtypes)
        if ref.float64:
            for j, tol in enumerate(ref.tolerances):
                flag = self._widen(ref, natives, j, tol)
                if flag is not None:
                    flags.append(flag)
        facts = self._task_facts(ref, spec, natives, work)
        ref.flags = ([own_dtype] if own_dtype else []) + flags + facts.flags
        ref.mutates_inputs, ref.aliases_inputs = facts.mutates, facts.aliases
        ref.degeneracy, ref.small_degeneracy = facts.degeneracy, facts.small_degeneracy
        ref.degeneracy_checked = facts.checked
        ref.drawn.clear()  # a copy drawn for facts another reference of the task found first
        del natives

    def _random_forward(self, ref: Reference, spec: JobSpec, first: list[torch.Tensor]) -> AuditFlag | None:
        """Whether the task's forward draws random numbers (`_random_forward`), found once per task, sizes and
        mode: its first trial's inputs drawn again, and the model's output on them under another seed."""
        key = (spec.task_path, spec.sizes, spec.mode)
        if key not in self._drawing:
            seed = ref.trial_seeds[0]
            args = make_args(ref.module, "get_inputs", seed, self.device, ref.cast, on_device=spec.generate_on_device)
            other = self.forward(ref.native, args, other_seed(seed))
            self._drawing[key] = random_forward_flag(other, first, ref.tolerances, float64=ref.float64)
        return self._drawing[key]

    @staticmethod
    def _own_dtype(ref: Reference, exc: TaskFault) -> AuditFlag:
        """The reference of a model that cannot run in float64 (a tensor it makes in its own dtype meets a float64
        one: an LSTM's initial state drawn in forward, a mask fixed as float32) is the model in the task's dtype, as
        PyTorch runs it; the flag that says so."""
        ref.reference, ref.float64 = ref.native, False
        cause = str(exc).removeprefix("the reference Model's forward raised ")
        return AuditFlag(
            code="reference_own_dtype",
            severity="info",
            message="the reference ran in the task's own dtype, not in float64: a float64 copy of the model raised "
            f"{cause[:200]}",
        )

    @staticmethod
    def _widen(ref: Reference, natives: list[list[torch.Tensor]], j: int, tol: Tolerance) -> AuditFlag | None:
        """Where PyTorch's own reference in the task's dtype misses the tolerance against the float64 one, output
        `j` is allowed twice its miss; but never so much that an output of one value (zero, or the float64
        output's mean) would pass, unless PyTorch's reference is itself no closer than such an output (rounding
        noise: the task is then named degenerate). The flag that says so, or None. A miss without bound (a float64
        output of exact zeros, which allows no error at all) widens nothing: the zeros are the answer."""
        worst = max(excess(natives[i][j], ref.refs[i][j], tol) for i in range(len(natives)))
        if worst <= 1.0 or not math.isfinite(worst):
            return None
        constant = min(constant_excess(ref.refs[i][j], tol)[1] for i in range(len(natives)))
        allowance = 2.0 * worst
        capped = worst < constant and allowance >= constant
        if capped:  # between PyTorch's miss and a constant's: the one passes, the other never does
            allowance = math.sqrt(worst * constant)
        ref.allowance[j] = allowance
        cap = f" (not more: an output of one value misses it by {constant:.2g}x)" if capped else ""
        return AuditFlag(
            code="reference_imprecise",
            severity="info",
            message=f"PyTorch's own {tol.dtype} reference misses the tolerance by {worst:.2g}x on this task, so output "
            f"{j} is allowed {allowance:.2g}x the tolerance{cap}",
        )

    def _task_facts(
        self, ref: Reference, spec: JobSpec, natives: list[list[torch.Tensor]], work: TaskWork | None
    ) -> TaskFacts:
        """Once per task, sizes and mode: is the reference deterministic, does its output depend on the
        inputs, would zeros pass, does it modify or alias its inputs, and is the task degenerate. Every output is
        held to the tolerance that judges candidates (widened where PyTorch's own reference misses it)."""
        key = (spec.task_path, spec.sizes, spec.mode)
        if key in self._task_flags:
            return self._task_flags[key]
        flags: list[AuditFlag] = []
        args = self.inputs(ref, spec, ref.trial_seeds[0])
        pristine = clone_args(list(args))
        again = self.forward(ref.native, args, ref.trial_seeds[0])
        now, before = tensors_in(args), tensors_in(pristine)
        mutates = len(now) != len(before) or any(not torch.equal(a, p) for a, p in zip(now, before, strict=True))
        aliases = any(
            t.untyped_storage().data_ptr() == a.untyped_storage().data_ptr() for t in again for a in tensors_in(args)
        )
        deterministic = True
        for j, tol in enumerate(ref.tolerances):
            ref0, allowance = ref.refs[0][j], ref.allowance[j]
            if not compare(again[j], natives[0][j], tol, allowance=allowance).passed:
                deterministic = False
                flags.append(
                    AuditFlag(
                        code="ill_posed_task",
                        severity="warn",
                        message="the reference is not deterministic (two runs on the same inputs "
                        "differ; active dropout?), so results on this task are unreliable",
                    )
                )
            if ref0.is_floating_point() and compare(torch.zeros_like(ref0), ref0, tol, allowance=allowance).passed:
                flags.append(
                    AuditFlag(
                        code="ill_posed_task",
                        severity="warn",
                        message=f"an all-zero output {j} passes the tolerance on this task",
                    )
                )
            if len(ref.refs) > 1 and compare(ref.refs[1][j], ref0, tol, allowance=allowance).passed:
                flags.append(
                    AuditFlag(
                        code="ill_posed_task",
                        severity="warn",
                        message=f"output {j} does not depend on the inputs (two different inputs give the same output)",
                    )
                )
        # a task that draws random numbers: a float64 copy draws others, and cannot tell its output from noise
        found = self._degeneracy(ref, spec, natives, work, deterministic and self._drawing.get(key) is None)
        task, small = found.named()
        self._task_flags[key] = facts = TaskFacts(flags + found.flags(), mutates, aliases, task, small, found.checked)
        return facts

    def _degeneracy(
        self, ref: Reference, spec: JobSpec, natives: list[list[torch.Tensor]], work: TaskWork | None, noise: bool
    ) -> Degeneracies:
        """Whether the task is degenerate at the sizes the judge runs (from its own outputs, a float64 copy of the
        model's where the mode has none) and, on the CPU at small sizes, at the full sizes where a check there is
        cheap enough (`full_check_fits`). A model the mode runs in its own dtype that cannot run in float64 (or
        not in the device's memory) leaves the question open: the task is not refused for it."""
        sizes: Literal["full", "small"] = "small" if spec.sizes == "small" else "full"
        if ref.float64:
            exact = [ref.refs[i] for i in range(min(2, len(ref.refs)))]
        else:
            try:
                model = upcast_copy(ref.native)
                exact = [
                    self.forward(model, upcast(args), seed)
                    for seed, args in zip(ref.trial_seeds[:2], ref.inputs[:2], strict=False)
                ]
                del model
            except (TaskFault, torch.OutOfMemoryError, RuntimeError):
                if self.device.type == "cuda":
                    torch.cuda.empty_cache()
                return Degeneracies(sizes, None, undecided=True)
        other = exact[1] if len(exact) > 1 and not same_inputs(ref.inputs[0], ref.inputs[1]) else None
        found = Degeneracies(sizes, outputs_degeneracy(natives[0], exact[0], other, sizes, noise=noise))
        if sizes == "small" and self.device.type == "cpu" and full_check_fits(work)[0]:
            found.at_full, found.full_checked = self._full_check(ref, spec)
        return found

    def _full_check(self, ref: Reference, spec: JobSpec) -> tuple[Degeneracy | None, bool]:
        """The task checked at its full sizes, once per task file and cast: (what it found, whether it ran)."""
        key = (spec.task_path, spec.cast_floats_to)
        if key not in self._full_degeneracy:
            try:
                module = load_task_module(spec.task_path, None, name=_FULL_CHECK_MODULE)
                found = reference_degeneracy(module, self.device, "full", init_seed=ref.init_seed, cast=ref.cast)
                self._full_degeneracy[key] = (found, True)
            except Exception:  # the task's code at its full sizes (its memory, say): not checked there
                self._full_degeneracy[key] = (None, False)
        return self._full_degeneracy[key]


@dataclass
class TaskFacts:
    flags: list[AuditFlag]
    mutates: bool
    aliases: bool
    degeneracy: Degeneracy | None = None
    small_degeneracy: Degeneracy | None = None
    checked: Literal["full", "small"] | None = "small"
