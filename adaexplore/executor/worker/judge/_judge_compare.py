"""The judge's comparison of a candidate's outputs with the reference's: for each call, the outputs' count, dtypes
and shapes, then their values within the reference's tolerances. The outputs are read from the files the
candidate wrote or copied out of the device buffer it wrote into; a timed call's reference outputs are computed
again on its inputs, rebuilt from the call's pattern. Also `Job`, what the judge holds for one job."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from adaexplore.domain import TrialResult
from adaexplore.executor.wire._protocol import Compare, Compared, DeviceExchange, InputPattern, JobSpec, TensorFile
from adaexplore.executor.worker.exchange._device_memory import DeviceBuffer
from adaexplore.executor.worker.exchange._exchange import read_tensor
from adaexplore.executor.worker.judge._compare import compare
from adaexplore.executor.worker.judge._reference_build import ReferenceBuilder
from adaexplore.executor.worker.judge._references import Reference
from adaexplore.executor.worker.task._taskrun import clone_args, upcast
from adaexplore.executor.worker.timing._kept import positions
from adaexplore.executor.worker.timing._perturb import apply_pattern, factor_pool, floating_tensors, pool_size

__all__ = ["Job", "compare_outputs", "timing_base"]


@dataclass
class Job:
    """One job the judge serves: its spec, the reference it uses (from the cache or not), and on a GPU the
    buffers it shares with the candidate's worker."""

    spec: JobSpec
    key: str
    ref: Reference
    cached: bool
    # the shared buffers of this job (GPU): the inputs the candidate copies, the outputs it writes
    inputs: DeviceBuffer | None = None
    outputs: DeviceBuffer | None = None
    layout: DeviceExchange | None = None
    buffers_bytes: int = 0


def compare_outputs(job: Job, command: Compare, builder: ReferenceBuilder, device: torch.device) -> Compared:
    """The verdict on each call's outputs that `command` names."""
    directory = Path(job.spec.exchange_dir)
    results: list[TrialResult] = []
    unpatterned: list[torch.Tensor] | None = None  # the timing inputs' outputs, computed once
    for index, files in enumerate(command.outputs):
        ref = job.ref
        if command.patterns is None:
            refs, seed = ref.refs[index], ref.trial_seeds[index]
        else:
            pattern = command.patterns[index]
            if pattern is None:
                if unpatterned is None:
                    unpatterned = _patterned_reference(job, None, builder)
                refs = unpatterned
            else:
                refs = _patterned_reference(job, pattern, builder)
            seed = pattern.seed if pattern is not None and pattern.seed is not None else ref.timing_seed
        results.append(_judge_one(job, index, seed, files, refs, directory, device))
    if job.outputs is not None:
        job.outputs.tensor.fill_(255)  # the next calls' outputs must be written again to pass
    return Compared(results=results)


def timing_base(job: Job, builder: ReferenceBuilder) -> list[Any]:
    """The timing seed's inputs, drawn once per reference (the rechecks and the reference timing scale them)."""
    ref = job.ref
    if ref.timing_base is None:
        ref.timing_base = builder.inputs(ref, job.spec, ref.timing_seed)
    return ref.timing_base


def _patterned_reference(job: Job, pattern: InputPattern | None, builder: ReferenceBuilder) -> list[torch.Tensor]:
    """The reference's outputs on the inputs of a timed call, rebuilt from its pattern (None: the timing
    inputs as they are)."""
    ref = job.ref
    if pattern is not None and pattern.seed is not None:
        # the call's own draw of a task with integer inputs
        args = builder.inputs(ref, job.spec, pattern.seed)
        return builder.forward(ref.reference, upcast(args) if ref.float64 else args)
    base = timing_base(job, builder)
    if pattern is None:
        args = clone_args(base)
        return builder.forward(ref.reference, upcast(args) if ref.float64 else args)
    tensors = floating_tensors(base)
    if (
        len(pattern.offsets) != len(tensors)
        or len(pattern.congruent) != len(tensors)
        or (pattern.order and len(pattern.order) != len(tensors))
    ):
        raise ValueError(f"a pattern for {len(pattern.offsets)} floating inputs; the task has {len(tensors)}")
    if ref.pattern_pool is None or ref.pattern_pool[0] != pattern.key:
        pool = factor_pool(pattern.key, pool_size(base, pattern.congruent), tensors[0].device)
        ref.pattern_pool = (pattern.key, pool)
    # a copy of everything, so that a reference that writes to its inputs cannot change the kept base
    args = clone_args(apply_pattern(base, pattern, ref.pattern_pool[1]))
    return builder.forward(ref.reference, upcast(args) if ref.float64 else args)


def _read(job: Job, index: int, j: int, meta: TensorFile, directory: Path, device: torch.device) -> torch.Tensor:
    """The candidate's output `j` of call `index`, in memory of the judge's own."""
    if meta.path:
        return read_tensor(meta, directory).to(device)
    if job.outputs is None or job.layout is None or index >= len(job.layout.sets):
        raise ValueError("it is said to be in the device exchange, which holds no such call")
    slot = job.layout.sets[index][j]
    # a copy: the candidate's process maps the buffer and could change it while the comparison runs
    return job.outputs.view(slot.offset, slot.shape, getattr(torch, slot.dtype)).clone()


def _judge_one(
    job: Job,
    index: int,
    seed: int,
    files: list[Any],
    refs: list[torch.Tensor],
    directory: Path,
    device: torch.device,
) -> TrialResult:
    """Call `index`'s verdict: on the first output that fails, else on the passing output of the largest scaled
    error."""
    if len(files) != len(refs):
        return TrialResult(
            index=index,
            seed=seed,
            passed=False,
            message=f"forward returned {len(files)} tensors; the reference returns {len(refs)}",
        )
    worst = TrialResult(index=index, seed=seed, passed=True)
    for j, (meta, ref) in enumerate(zip(files, refs, strict=True)):
        expected = str(job.ref.dtypes[j]).removeprefix("torch.")
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
        try:
            out = _read(job, index, j, meta, directory, device)
        except ValueError as exc:  # a description that names no output the candidate made
            return TrialResult(index=index, seed=seed, passed=False, message=f"output {j}: {exc}")
        if meta.sampled:
            if meta.sampled >= ref.numel():
                message = f"output {j}: a sample of {meta.sampled} of its {ref.numel()} elements is no recheck"
                return TrialResult(index=index, seed=seed, passed=False, message=message)
            # the reference's values where the worker drew the candidate's, after the call
            ref = ref.reshape(-1)[positions(meta.sample_seed, ref.numel(), meta.sampled, ref.device)]
        result = compare(
            out, ref, job.ref.tolerances[j], allowance=job.ref.allowance[j], spread=job.spec.reduction_check
        )
        del out
        if not result.passed or (result.max_scaled_error or 0) >= (worst.max_scaled_error or 0):
            worst = TrialResult(
                index=index,
                seed=seed,
                passed=result.passed,
                max_abs_error=result.max_abs_error,
                max_scaled_error=result.max_scaled_error,
                norm_rel_error=result.norm_rel_error,
                norm_rel_spread=result.norm_rel_spread,
                message=None if result.passed else f"output {j}: {result.message}",
            )
        if not result.passed:
            return worst
    return worst
