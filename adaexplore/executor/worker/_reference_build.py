"""How the judge builds a reference: the task's module and models, the inputs, the outputs, the task's facts."""

from __future__ import annotations

import time
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar

import torch

from adaexplore.domain import AuditFlag, Mode, Tolerance
from adaexplore.executor.wire._modes import mode_spec, tolerance_for
from adaexplore.executor.wire._protocol import JobSpec
from adaexplore.executor.worker._compare import compare
from adaexplore.executor.worker._draws import DrawReport, draw_side_by_side
from adaexplore.executor.worker._faults import TaskFault
from adaexplore.executor.worker._references import Reference
from adaexplore.executor.worker._taskrun import (
    build_model,
    clone_args,
    draw_args,
    flatten_output,
    load_task_module,
    make_args,
    place_args,
    resolve_seeds,
    tensors_in,
    upcast,
    upcast_copy,
)

__all__ = ["ReferenceBuilder"]

T = TypeVar("T")


class ReferenceBuilder:
    """Runs the task's own code for the judge. It keeps each task's module, and what it learned of each task
    once (its facts do not depend on the seeds)."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self._modules: dict[tuple[str, str], ModuleType] = {}
        self._task_flags: dict[tuple[str, str, Mode], tuple[list[AuditFlag], bool, bool]] = {}
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

    def forward(self, model: torch.nn.Module, args: list[Any]) -> list[torch.Tensor]:
        try:
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

    def compute(self, ref: Reference, spec: JobSpec) -> None:
        """The reference outputs of every trial, the tolerances, and the task's facts."""
        natives: list[list[torch.Tensor]] = []
        refs: list[list[torch.Tensor]] = []
        for args in ref.inputs:
            native_out = self.forward(ref.native, args)
            ref_out = self.forward(ref.reference, upcast(args)) if ref.float64 else native_out
            natives.append(native_out)
            refs.append(ref_out)
        ref.refs = refs
        ref.dtypes = [t.dtype for t in natives[0]]
        ref.tolerances = [
            tolerance_for(spec.mode, str(d).removeprefix("torch."), spec.allowed_precision, spec.task_tolerance)
            for d in ref.dtypes
        ]
        flags: list[AuditFlag] = []
        ref.allowance = [1.0] * len(ref.dtypes)
        if ref.float64:
            for j, tol in enumerate(ref.tolerances):
                worst = max(self._excess(natives[i][j], ref.refs[i][j], tol) for i in range(len(natives)))
                if worst > 1.0:
                    ref.allowance[j] = 2.0 * worst
                    flags.append(
                        AuditFlag(
                            code="reference_imprecise",
                            severity="info",
                            message=f"PyTorch's own {tol.dtype} reference misses the tolerance by {worst:.2g}x on this "
                            f"task, so output {j} is allowed {ref.allowance[j]:.2g}x the tolerance",
                        )
                    )
        facts = self._task_facts(ref, spec, natives)
        ref.flags = flags + facts[0]
        ref.mutates_inputs, ref.aliases_inputs = facts[1], facts[2]
        ref.drawn.clear()  # a copy drawn for facts another reference of the task found first
        del natives

    @staticmethod
    def _excess(out: torch.Tensor, ref: torch.Tensor, tol: Tolerance) -> float:
        """How many times over the tolerance `out` is (<= 1 passes)."""
        result = compare(out, ref, tol)
        ratios = [result.max_scaled_error or 0.0]
        if tol.norm_rtol and result.norm_rel_error is not None:
            ratios.append(result.norm_rel_error / tol.norm_rtol)
        return max(ratios)

    def _task_facts(
        self, ref: Reference, spec: JobSpec, natives: list[list[torch.Tensor]]
    ) -> tuple[list[AuditFlag], bool, bool]:
        """Once per task, sizes and mode: is the reference deterministic, does its output depend on the
        inputs, would zeros pass, and does it modify or alias its inputs."""
        key = (spec.task_path, spec.sizes, spec.mode)
        if key in self._task_flags:
            return self._task_flags[key]
        flags: list[AuditFlag] = []
        args = self.inputs(ref, spec, ref.trial_seeds[0])
        pristine = clone_args(list(args))
        again = self.forward(ref.native, args)
        now, before = tensors_in(args), tensors_in(pristine)
        mutates = len(now) != len(before) or any(not torch.equal(a, p) for a, p in zip(now, before, strict=True))
        aliases = any(
            t.untyped_storage().data_ptr() == a.untyped_storage().data_ptr() for t in again for a in tensors_in(args)
        )
        for j, tol in enumerate(ref.tolerances):
            ref0 = ref.refs[0][j]
            if not compare(again[j], natives[0][j], tol).passed:
                flags.append(
                    AuditFlag(
                        code="ill_posed_task",
                        severity="warn",
                        message="the reference is not deterministic (two runs on the same inputs "
                        "differ; active dropout?), so results on this task are unreliable",
                    )
                )
            if ref0.is_floating_point() and compare(torch.zeros_like(ref0), ref0, tol).passed:
                flags.append(
                    AuditFlag(
                        code="ill_posed_task",
                        severity="warn",
                        message=f"an all-zero output {j} passes the tolerance on this task",
                    )
                )
            if len(ref.refs) > 1 and compare(ref.refs[1][j], ref0, tol).passed:
                flags.append(
                    AuditFlag(
                        code="ill_posed_task",
                        severity="warn",
                        message=f"output {j} does not depend on the inputs (two different inputs give the same output)",
                    )
                )
        self._task_flags[key] = (flags, mutates, aliases)
        return self._task_flags[key]
