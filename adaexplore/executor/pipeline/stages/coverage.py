"""Stage 2b (machines without a GPU): does the forward, at the task's full sizes, write every element of every output?

The trials run at small sizes, where one program may cover a whole output: a kernel launched over a grid of fixed size
passes them and leaves most of a full-size output unwritten on the GPU. The compile check follows the forward at the
task's full sizes on shape-only tensors and, for each launch, where its stores may write (worker/coverage/_coverage.py);
an output with elements that nothing wrote (or that were computed from such elements) makes the kernel a `mismatch`,
which says which output, how many elements and where. The verdict is drawn after the trials (a rule they find broken
outweighs a gap), before the full-size probes. What the check could not follow is taken as written and said in an info
flag; a verdict given without the check (the interpreter alone, or a forward that could not be followed at full size)
says so in a warning.
"""

from __future__ import annotations

from adaexplore.domain import AuditFlag, Backend, Status
from adaexplore.executor.pipeline.stages.context import Run, Verdict
from adaexplore.executor.wire._protocol import CoverageGap

__all__ = ["check", "describe_gap"]


def _index(index: list[int]) -> str:
    return "[" + ", ".join(str(i) for i in index) + "]"


def describe_gap(gap: CoverageGap) -> str:
    """One output's gap in words."""
    elements = 1
    for n in gap.shape:
        elements *= n
    where = (
        f"at index {_index(gap.first)}" if gap.missing == 1 else f"from index {_index(gap.first)} to {_index(gap.last)}"
    )
    text = (
        f"output {gap.output} (shape {_index(gap.shape)}): {gap.missing:,} of its {elements:,} elements are never "
        f"written, {where}"
    )
    if gap.writers:
        text += f"; what writes into its buffer: {'; '.join(gap.writers)}"
    if gap.derived:
        text += f"; {'; '.join(gap.derived)}"
    elif not gap.writers:
        text += "; no launch writes into its buffer"
    return text


def check(ctx: Run) -> None:
    """Draw the verdict from what the compile check found (`ctx.coverage`), once: after the trials at the small
    sizes where the interpreter runs them (a rule they find broken outweighs a gap), else after the compile check.

    Raises:
        Verdict: `mismatch` where an output has elements never written at the task's full sizes.
    """
    if ctx.coverage_checked:
        return
    ctx.coverage_checked = True
    coverage = ctx.coverage
    small = ctx.sizes == "small" and bool(ctx.task.small_sizes)
    if coverage is None:
        work = ctx.candidate_work
        if not small:
            return  # the trials ran at the full sizes themselves
        if work is not None and not work.complete:
            why = f"it could not be followed to its end there ({work.note[:200]})"
        elif Backend.compile not in ctx.planned:
            why = "the interpreter alone checked the small sizes (the compile backend, on the automatic path, does)"
        else:
            return
        ctx.add_flags(
            [
                AuditFlag(
                    code="coverage_unchecked",
                    severity="warn",
                    message="whether the forward writes every element of its outputs at the task's full sizes was not "
                    f"checked: {why}; a GPU judges it",
                )
            ]
        )
        return
    ctx.add_phase("coverage", coverage.seconds)
    if coverage.failed:
        ctx.add_flags(
            [
                AuditFlag(
                    code="coverage_unchecked",
                    severity="warn",
                    message="whether the forward writes every element of its outputs at the task's full sizes was "
                    f"not checked: the check itself failed ({coverage.failed}), not the kernel; a GPU judges it",
                )
            ]
        )
        return
    if coverage.gaps:
        gaps = "; ".join(describe_gap(g) for g in coverage.gaps[:3])
        ctx.timing = None  # a kernel that is not correct has no speed
        raise Verdict(
            Status.mismatch,
            f"correct at the small sizes, but at the task's full sizes the forward leaves part of its output "
            f"unwritten: {gaps}. On a GPU those elements hold whatever the memory held (followed on shape-only "
            "tensors, from each launch's grid and the addresses and masks of its stores; at the small sizes a few "
            "programs cover the whole output). Launch enough programs to cover every element at every size: a grid "
            "computed from the sizes, such as (triton.cdiv(n, BLOCK),)",
        )
    if coverage.notes:
        ctx.add_flags(
            [
                AuditFlag(
                    code="coverage_partial",
                    severity="info",
                    message="at the task's full sizes every output's elements are written, as far as the check "
                    f"could follow ({'; '.join(coverage.notes)[:400]}; taken as writing everywhere it might)",
                )
            ]
        )
