"""Tasks with several input sets (a module's INPUT_SETS, such as a FlashInfer-Bench definition's workloads).

At full size a kernel is judged on every set in turn, each as a task of its own (the module with the set's
names assigned at its end), so that references, reference timings and their caches stay per set. The task's
verdict is the first set that fails, with the sets after it not run; when every set passes, its speedup is the
geometric mean of theirs, and its timing's statistics are those of one pass over all the sets (their sums).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable

from adaexplore.domain import (
    Audit,
    AuditFlag,
    Correctness,
    Evaluation,
    InputSetResult,
    Stats,
    Status,
    Timing,
)
from adaexplore.executor.pipeline.stages.context import Progress, ProgressUpdate
from adaexplore.executor.tasks._task import Task, code_hash

__all__ = ["evaluate_each", "set_task"]

# evaluates one set's task with the budget left; returns its verdict and the candidate's time spent
EvaluateOne = Callable[[Task, float | None, Progress | None], Awaitable[tuple[Evaluation, float]]]


def set_task(task: Task, label: str) -> Task:
    """The task of one input set: the module's text with the set's names assigned after everything else."""
    assert task.input_sets is not None
    sizes = task.input_sets[label]
    assignments = "".join(f"{name} = {value!r}\n" for name, value in sizes.items())
    source = f"{task.source.rstrip()}\n\n# Input set {label!r}.\n{assignments}"
    return task.model_copy(
        update={
            "name": f"{task.name}[{label}]",
            "source": source,
            "hash": code_hash(source),
            "input_sets": None,
            "small_sizes": None,
        }
    )


def _labelled(progress: Progress | None, label: str, index: int, total: int) -> Progress | None:
    if progress is None:
        return None

    async def report(update: ProgressUpdate) -> None:
        await progress(update.model_copy(update={"message": f"input set {index}/{total} ({label}): {update.message}"}))

    return report


async def evaluate_each(
    task: Task, evaluate_one: EvaluateOne, *, budget_s: float | None, progress: Progress | None
) -> Evaluation:
    """Judge the candidate on each of `task`'s input sets in order, stopping at the first that fails."""
    assert task.input_sets is not None
    labels = list(task.input_sets)
    done: list[tuple[str, Evaluation]] = []
    spent = 0.0
    for index, label in enumerate(labels, start=1):
        left = None if budget_s is None else max(budget_s - spent, 1.0)
        evaluation, took = await evaluate_one(
            set_task(task, label), left, _labelled(progress, label, index, len(labels))
        )
        spent += took
        done.append((label, evaluation))
        if evaluation.status is not Status.ok:
            break
    return combine(task, done, not_run=labels[len(done) :])


def _sizes_text(sizes: dict[str, int | float]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items() if k != "WORKLOAD")


def _sum_stats(stats: list[Stats]) -> Stats:
    """One pass over every set: the sum of the sets' per-call times (their spread added as variances)."""
    trimmed = [s.trimmed_mean_ms for s in stats]
    return Stats(
        n=min(s.n for s in stats),
        median_ms=sum(s.median_ms for s in stats),
        mean_ms=sum(s.mean_ms for s in stats),
        warmup_n=min(s.warmup_n for s in stats),
        std_ms=math.sqrt(sum(s.std_ms**2 for s in stats)),
        min_ms=sum(s.min_ms for s in stats),
        max_ms=sum(s.max_ms for s in stats),
        p10_ms=sum(s.p10_ms for s in stats),
        p90_ms=sum(s.p90_ms for s in stats),
        trimmed_mean_ms=None if any(t is None for t in trimmed) else sum(t for t in trimmed if t is not None),
    )


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _timing(timings: list[Timing]) -> Timing:
    first = timings[0]
    compiled = [t.speedup_vs_compile for t in timings]
    references = [t.reference_compile for t in timings]
    return Timing(
        method=f"geometric mean of the speedups over {len(timings)} input sets, each timed by: {first.method}; "
        "the times are one pass over all the sets",
        statistic=first.statistic,
        candidate=_sum_stats([t.candidate for t in timings]),
        reference=_sum_stats([t.reference for t in timings]),
        speedup=_geomean([t.speedup for t in timings]),
        reference_compile=None if any(r is None for r in references) else _sum_stats([r for r in references if r]),
        speedup_vs_compile=None if any(c is None for c in compiled) else _geomean([c for c in compiled if c]),
        compile_error=next((t.compile_error for t in timings if t.compile_error), None),
        reference_cached=all(t.reference_cached for t in timings),
        host_bound_calls=sum(t.host_bound_calls for t in timings),
        unseen_ms=sum(t.unseen_ms for t in timings),
    )


def _result(label: str, sizes: dict[str, int | float], evaluation: Evaluation) -> InputSetResult:
    timing = evaluation.timing
    return InputSetResult(
        label=label,
        sizes=sizes,
        status=evaluation.status,
        message=evaluation.message,
        speedup=timing.speedup if timing else None,
        speedup_vs_compile=timing.speedup_vs_compile if timing else None,
        candidate_ms=timing.candidate.value(timing.statistic) if timing else None,
        reference_ms=timing.reference.value(timing.statistic) if timing else None,
    )


def _audit(evaluations: list[Evaluation]) -> Audit:
    """The last set's audit (the largest, as sets are listed smallest first), with every set's flags."""
    last = evaluations[-1].audit
    flags: list[AuditFlag] = []
    for evaluation in evaluations:
        flags += [flag for flag in evaluation.audit.flags if flag not in flags]
    return last.model_copy(update={"flags": flags})


def _correctness(done: list[tuple[str, Evaluation]]) -> Correctness | None:
    parts = [(label, e.correctness) for label, e in done if e.correctness is not None]
    if not parts:
        return None
    trials = [
        trial.model_copy(update={"message": f"input set {label}: {trial.message}"}) if trial.message else trial
        for label, correctness in parts
        for trial in correctness.trials
    ]
    return Correctness(
        passed=all(c.passed for _, c in parts),
        trials=trials,
        tolerance=parts[0][1].tolerance,
        rechecks=[r for _, c in parts for r in c.rechecks],
    )


def combine(task: Task, done: list[tuple[str, Evaluation]], *, not_run: list[str]) -> Evaluation:
    """The task's verdict from its sets' verdicts (`done`, in order; `not_run`: the sets after a failure)."""
    assert task.input_sets is not None
    evaluations = [e for _, e in done]
    last_label, last = done[-1]
    results = [_result(label, task.input_sets[label], e) for label, e in done]
    phases: dict[str, float] = {}
    for evaluation in evaluations:
        for name, seconds in evaluation.phases.items():
            phases[name] = round(phases.get(name, 0.0) + seconds, 4)
    provenance = last.provenance.model_copy(
        update={"task_hash": task.hash, "attempts": max(e.provenance.attempts for e in evaluations)}
    )
    total = len(task.input_sets)
    if last.status is not Status.ok:
        sizes = _sizes_text(task.input_sets[last_label])
        passed = f"; the {len(done) - 1} set(s) before it passed" if len(done) > 1 else ""
        skipped = f", {len(not_run)} not run" if not_run else ""
        message = f"input set {last_label} ({sizes}) of {total}: {last.message}{passed}{skipped}"
        timing = None
    else:
        timings = [e.timing for e in evaluations]
        timing = _timing([t for t in timings if t is not None]) if all(t is not None for t in timings) else None
        message = f"correct on all {total} input sets; {last.message}"
        if timing is not None:
            per_set = ", ".join(f"{r.label} {r.speedup:.2f}x" for r in results if r.speedup is not None)
            message = (
                f"correct on all {total} input sets; {timing.speedup:.2f}x the speed of eager PyTorch, the geometric "
                f"mean over the sets ({per_set})"
            )
            if timing.speedup_vs_compile is not None:
                message += f"; {timing.speedup_vs_compile:.2f}x the speed of torch.compile"
            warnings = [f.message for f in _audit(evaluations).flags if f.severity == "warn"]
            if warnings:
                message += "; warning: " + "; ".join(warnings)
    return Evaluation(
        status=last.status,
        message=message,
        mode=last.mode,
        backends=last.backends,
        timed=all(e.timed for e in evaluations) and last.status is Status.ok,
        correctness=_correctness(done),
        timing=timing,
        audit=_audit(evaluations),
        error=last.error,
        output=last.output,
        phases=phases,
        provenance=provenance,
        input_sets=results,
    )
