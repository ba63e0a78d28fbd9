"""The judge: computes reference outputs and reference timings, and compares candidate outputs.

It runs the task's code and reads candidate outputs as raw bytes; it never imports a candidate.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from adaexplore.executor._models import AuditFlag, Mode, Tolerance, TrialResult
from adaexplore.executor._modes import mode_spec, tolerance_for
from adaexplore.executor._protocol import (
    Compare,
    Compared,
    Done,
    InputPattern,
    JobSpec,
    Load,
    Prepare,
    Prepared,
    ReferenceTimed,
    Release,
    TaskFailed,
    TimeReference,
)
from adaexplore.executor.worker._compare import compare
from adaexplore.executor.worker._exchange import read_tensor
from adaexplore.executor.worker._perturb import (
    apply_pattern,
    factor_pool,
    floating_tensors,
    has_integer_inputs,
    pool_size,
)
from adaexplore.executor.worker._taskrun import (
    TaskFault,
    build_model,
    clone_args,
    flatten_output,
    load_task_module,
    make_args,
    resolve_seeds,
    tensors_in,
    upcast,
    upcast_copy,
)
from adaexplore.executor.worker._timing import Timer, summarize

__all__ = ["Judge"]


@dataclass
class _Job:
    spec: JobSpec
    module: ModuleType
    cast: torch.dtype | None
    native: torch.nn.Module
    reference: torch.nn.Module
    float64: bool
    init_seed: int
    trial_seeds: list[int]
    timing_seed: int
    inputs: list[list[Any]] = field(default_factory=list)
    refs: list[list[torch.Tensor]] = field(default_factory=list)
    tolerances: list[Tolerance] = field(default_factory=list)
    allowance: list[float] = field(default_factory=list)
    dtypes: list[torch.dtype] = field(default_factory=list)
    timing_base: list[Any] | None = None
    # the pool of the timed calls' factors, with its key (worker/_perturb.py)
    pattern_pool: tuple[int, torch.Tensor] | None = None


class Judge:
    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.jobs: dict[str, _Job] = {}
        self._modules: dict[tuple[str, str], ModuleType] = {}
        self._task_flags: dict[tuple[str, str, Mode], tuple[list[AuditFlag], bool, bool]] = {}
        self._timer: Timer | None = None

    def handle(self, command: Load | Prepare | Compare | TimeReference | Release) -> Any:
        try:
            if isinstance(command, Load):
                self.load(command.job)
                return Done()
            if isinstance(command, Prepare):
                return self.prepare(self.jobs[command.job_id])
            if isinstance(command, Compare):
                return self.compare(command)
            if isinstance(command, TimeReference):
                return self.time_reference(command)
            self.jobs.pop(command.job_id, None)
            if self.device.type == "cuda":
                torch.cuda.empty_cache()
            return None
        except TaskFault as exc:
            return TaskFailed(message=str(exc))

    # ------------------------------------------------------------------------------------------
    def _module(self, spec: JobSpec) -> ModuleType:
        key = (spec.task_path, spec.sizes)
        if key not in self._modules:
            self._modules[key] = load_task_module(spec.task_path, spec.small_sizes if spec.sizes == "small" else None)
        return self._modules[key]

    def _forward(self, model: torch.nn.Module, args: list[Any]) -> list[torch.Tensor]:
        try:
            with torch.no_grad():
                out = model(*args)
            return [t.detach() for t in flatten_output(out)]
        except Exception as exc:
            raise TaskFault(f"the reference Model's forward raised {type(exc).__name__}: {exc}") from exc

    def load(self, spec: JobSpec) -> None:
        mode = mode_spec(spec.mode)
        module = self._module(spec)
        cast = getattr(torch, spec.cast_floats_to) if spec.cast_floats_to else None
        init_seed, trial_seeds, timing_seed = resolve_seeds(spec)
        on_device = spec.generate_on_device
        init_args = make_args(module, "get_init_inputs", init_seed, self.device, cast, on_device=on_device)
        try:
            native = build_model(module.Model, init_args, init_seed, self.device, cast, on_device=on_device)
        except Exception as exc:
            raise TaskFault(f"Model(*get_init_inputs()) raised {type(exc).__name__}: {exc}") from exc
        float64 = mode.reference_precision == "float64"
        job = _Job(
            spec=spec,
            module=module,
            cast=cast,
            native=native,
            reference=upcast_copy(native) if float64 else native,
            float64=float64,
            init_seed=init_seed,
            trial_seeds=trial_seeds,
            timing_seed=timing_seed,
        )
        job.inputs = [
            make_args(module, "get_inputs", seed, self.device, cast, on_device=on_device) for seed in trial_seeds
        ]
        self.jobs[spec.job_id] = job

    def prepare(self, job: _Job) -> Prepared:
        spec = job.spec
        torch.backends.cuda.matmul.allow_tf32 = spec.allow_tf32_matmul
        torch.backends.cudnn.allow_tf32 = spec.allow_tf32_cudnn
        natives: list[list[torch.Tensor]] = []
        for args in job.inputs:
            native_out = self._forward(job.native, args)
            ref_out = self._forward(job.reference, upcast(args)) if job.float64 else native_out
            natives.append(native_out)
            job.refs.append(ref_out)
        float64 = job.float64
        job.dtypes = [t.dtype for t in natives[0]]
        job.tolerances = [
            tolerance_for(spec.mode, str(d).removeprefix("torch."), spec.allowed_precision) for d in job.dtypes
        ]
        flags: list[AuditFlag] = []
        job.allowance = [1.0] * len(job.dtypes)
        if float64:
            for j, tol in enumerate(job.tolerances):
                worst = max(self._excess(natives[i][j], job.refs[i][j], tol) for i in range(len(natives)))
                if worst > 1.0:
                    job.allowance[j] = 2.0 * worst
                    flags.append(
                        AuditFlag(
                            code="reference_imprecise",
                            severity="info",
                            message=f"PyTorch's own {tol.dtype} reference misses the tolerance by {worst:.2g}x on this "
                            f"task, so output {j} is allowed {job.allowance[j]:.2g}x the tolerance",
                        )
                    )
        facts = self._task_facts(job, natives)
        flags.extend(facts[0])
        job.inputs = []
        return Prepared(
            init_seed=job.init_seed,
            trial_seeds=job.trial_seeds,
            timing_seed=job.timing_seed,
            tolerances=job.tolerances,
            task_flags=flags,
            reference_mutates_inputs=facts[1],
            reference_aliases_inputs=facts[2],
            output_elements=max(sum(t.numel() for t in refs) for refs in job.refs) if job.refs else None,
        )

    @staticmethod
    def _excess(out: torch.Tensor, ref: torch.Tensor, tol: Tolerance) -> float:
        """How many times over the tolerance `out` is (<= 1 passes)."""
        result = compare(out, ref, tol)
        ratios = [result.max_scaled_error or 0.0]
        if tol.norm_rtol and result.norm_rel_error is not None:
            ratios.append(result.norm_rel_error / tol.norm_rtol)
        return max(ratios)

    def _task_facts(self, job: _Job, natives: list[list[torch.Tensor]]) -> tuple[list[AuditFlag], bool, bool]:
        """Once per task, sizes and mode: is the reference deterministic, does its output depend on the
        inputs, would zeros pass, and does it modify or alias its inputs."""
        key = (job.spec.task_path, job.spec.sizes, job.spec.mode)
        if key in self._task_flags:
            return self._task_flags[key]
        flags: list[AuditFlag] = []
        args = self._inputs(job, job.trial_seeds[0])
        pristine = clone_args(list(args))
        again = self._forward(job.native, args)
        now, before = tensors_in(args), tensors_in(pristine)
        mutates = len(now) != len(before) or any(not torch.equal(a, p) for a, p in zip(now, before, strict=True))
        aliases = any(
            t.untyped_storage().data_ptr() == a.untyped_storage().data_ptr() for t in again for a in tensors_in(args)
        )
        for j, tol in enumerate(job.tolerances):
            ref0 = job.refs[0][j]
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
            if len(job.refs) > 1 and compare(job.refs[1][j], ref0, tol).passed:
                flags.append(
                    AuditFlag(
                        code="ill_posed_task",
                        severity="warn",
                        message=f"output {j} does not depend on the inputs (two different inputs give the same output)",
                    )
                )
        self._task_flags[key] = (flags, mutates, aliases)
        return self._task_flags[key]

    # ------------------------------------------------------------------------------------------
    def compare(self, command: Compare) -> Compared:
        job = self.jobs[command.job_id]
        directory = Path(job.spec.exchange_dir)
        results: list[TrialResult] = []
        for index, files in enumerate(command.outputs):
            if command.patterns is None:
                refs, seed = job.refs[index], job.trial_seeds[index]
            else:
                pattern = command.patterns[index]
                refs = self._patterned_reference(job, pattern)
                seed = pattern.seed if pattern is not None and pattern.seed is not None else job.timing_seed
            results.append(self._judge_one(job, index, seed, files, refs, directory))
        return Compared(results=results)

    def _inputs(self, job: _Job, seed: int) -> list[Any]:
        return make_args(job.module, "get_inputs", seed, self.device, job.cast, on_device=job.spec.generate_on_device)

    def _timing_base(self, job: _Job) -> list[Any]:
        """The timing seed's inputs, drawn once per job (the rechecks and the reference timing scale them)."""
        if job.timing_base is None:
            job.timing_base = self._inputs(job, job.timing_seed)
        return job.timing_base

    def _patterned_reference(self, job: _Job, pattern: InputPattern | None) -> list[torch.Tensor]:
        """The reference's outputs on the inputs of a timed call, rebuilt from its pattern (None: the timing
        inputs as they are)."""
        if pattern is not None and pattern.seed is not None:
            # the call's own draw of a task with integer inputs
            args = self._inputs(job, pattern.seed)
            return self._forward(job.reference, upcast(args) if job.float64 else args)
        base = self._timing_base(job)
        if pattern is None:
            args = clone_args(base)
            return self._forward(job.reference, upcast(args) if job.float64 else args)
        tensors = floating_tensors(base)
        if (
            len(pattern.offsets) != len(tensors)
            or len(pattern.congruent) != len(tensors)
            or (pattern.order and len(pattern.order) != len(tensors))
        ):
            raise ValueError(f"a pattern for {len(pattern.offsets)} floating inputs; the task has {len(tensors)}")
        if job.pattern_pool is None or job.pattern_pool[0] != pattern.key:
            pool = factor_pool(pattern.key, pool_size(base, pattern.congruent), tensors[0].device)
            job.pattern_pool = (pattern.key, pool)
        # a copy of everything, so that a reference that writes to its inputs cannot change the kept base
        args = clone_args(apply_pattern(base, pattern, job.pattern_pool[1]))
        return self._forward(job.reference, upcast(args) if job.float64 else args)

    def _judge_one(
        self, job: _Job, index: int, seed: int, files: list[Any], refs: list[torch.Tensor], directory: Path
    ) -> TrialResult:
        if len(files) != len(refs):
            return TrialResult(
                index=index,
                seed=seed,
                passed=False,
                message=f"forward returned {len(files)} tensors; the reference returns {len(refs)}",
            )
        worst = TrialResult(index=index, seed=seed, passed=True)
        for j, (meta, ref) in enumerate(zip(files, refs, strict=True)):
            expected = str(job.dtypes[j]).removeprefix("torch.")
            if meta.dtype != expected:
                return TrialResult(
                    index=index,
                    seed=seed,
                    passed=False,
                    message=f"output {j} has dtype {meta.dtype}; the reference returns {expected}",
                )
            if list(ref.shape) != meta.shape:
                return TrialResult(
                    index=index,
                    seed=seed,
                    passed=False,
                    message=f"output {j} has shape {tuple(meta.shape)}; the reference returns {tuple(ref.shape)}",
                )
            out = read_tensor(meta, directory).to(self.device)
            result = compare(out, ref, job.tolerances[j], allowance=job.allowance[j])
            if not result.passed or (result.max_scaled_error or 0) >= (worst.max_scaled_error or 0):
                worst = TrialResult(
                    index=index,
                    seed=seed,
                    passed=result.passed,
                    max_abs_error=result.max_abs_error,
                    max_scaled_error=result.max_scaled_error,
                    norm_rel_error=result.norm_rel_error,
                    message=None if result.passed else f"output {j}: {result.message}",
                )
            if not result.passed:
                return worst
        return worst

    # ------------------------------------------------------------------------------------------
    def time_reference(self, command: TimeReference) -> ReferenceTimed:
        job = self.jobs[command.job_id]
        if self._timer is None:
            self._timer = Timer(self.device)
        base = self._timing_base(job)
        stats = self._measure(lambda args: job.native(*args), base, command, job)
        compile_stats = None
        if command.with_compile:
            compiled = torch.compile(job.native)
            with torch.no_grad() if command.timing.no_grad else contextlib.nullcontext():
                compiled(*base)
            compile_stats = self._measure(lambda args: compiled(*args), base, command, job)
        return ReferenceTimed(stats=stats, compile_stats=compile_stats)

    def _measure(self, call: Any, base: list[Any], command: TimeReference, job: _Job) -> Any:
        assert self._timer is not None
        try:
            measured = self._timer.measure(
                call,
                base,
                command.timing,
                budget_ms=command.budget_ms,
                min_reps=command.min_reps,
                max_reps=command.max_reps,
                # timed as the candidate is: a task with integer inputs draws each call's inputs anew
                redraw=(lambda seed: self._inputs(job, seed)) if has_integer_inputs(base) else None,
            )
        except Exception as exc:
            raise TaskFault(f"the reference Model raised while being timed: {type(exc).__name__}: {exc}") from exc
        return summarize(measured.times_ms, command.timing, measured.warmup_n)
