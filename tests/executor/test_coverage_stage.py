"""The full-coverage stage's words: a gap is a `mismatch` that says which output, how many elements and where, and
what wrote into its buffer; what the check could not follow, or its own failure, is a flag and never the
kernel's verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from adaexplore.domain import Backend, Mode, Status
from adaexplore.executor import load_task
from adaexplore.executor.pipeline.stages import coverage
from adaexplore.executor.pipeline.stages.context import Run, Verdict
from adaexplore.executor.wire._protocol import Coverage, CoverageGap
from adaexplore.roofline import ForwardWork

TASK = load_task(str(Path(__file__).parent / "data" / "scale_relu_task.py"))


def _run(coverage: Coverage | None = None) -> Run:
    run = Run(TASK, "", Mode.strict, None)
    run.sizes = "small"
    run.planned = [Backend.compile, Backend.interpret]
    run.coverage = coverage
    return run


def test_a_gap_is_a_mismatch_that_says_where_and_what_wrote() -> None:
    gap = CoverageGap(
        output=0, shape=[64, 1000], missing=63744, first=[0, 256], last=[63, 999], writers=["k over grid (1,)"]
    )
    run = _run(Coverage(outputs=1, launches=1, gaps=[gap], seconds=0.01))
    with pytest.raises(Verdict) as raised:
        coverage.check(run)
    assert raised.value.status is Status.mismatch
    assert raised.value.message.startswith("correct at the small sizes, but at the task's full sizes the forward")
    coverage.check(run)  # drawn once: a second call (after another stage) raises nothing
    assert (
        "output 0 (shape [64, 1000]): 63,744 of its 64,000 elements are never written, from index [0, 256] to "
        "[63, 999]; what writes into its buffer: k over grid (1,)"
    ) in raised.value.message
    derived = gap.model_copy(update={"writers": [], "derived": ["aten.add read 10 elements that k never wrote"]})
    assert coverage.describe_gap(derived).endswith("; aten.add read 10 elements that k never wrote")
    alone = gap.model_copy(update={"writers": [], "missing": 1, "last": [0, 256]})
    assert coverage.describe_gap(alone).endswith(
        "1 of its 64,000 elements are never written, at index [0, 256]; no launch writes into its buffer"
    )


def test_what_the_check_cannot_follow_is_a_flag_not_a_verdict() -> None:
    run = _run(Coverage(outputs=1, launches=1, notes=["k was followed only in part: it ran out of time"]))
    coverage.check(run)
    assert [f.code for f in run.audit.flags] == ["coverage_partial"] and run.audit.flags[0].severity == "info"
    failed = _run(Coverage(outputs=1, launches=0, failed="ValueError: boom"))
    coverage.check(failed)
    assert [(f.code, f.severity) for f in failed.audit.flags] == [("coverage_unchecked", "warn")]
    assert "the check itself failed (ValueError: boom), not the kernel" in failed.audit.flags[0].message
    stopped = _run()
    stopped.candidate_work = ForwardWork(steps=[], complete=False, note="forward raised on shape-only tensors")
    coverage.check(stopped)
    assert [f.code for f in stopped.audit.flags] == ["coverage_unchecked"]
    clean = _run(Coverage(outputs=1, launches=1, seconds=0.02))
    coverage.check(clean)
    assert clean.audit.flags == [] and clean.phases["coverage"] == 0.02


def test_the_interpreter_alone_says_it_did_not_check_the_full_sizes() -> None:
    alone = _run()
    alone.planned = [Backend.interpret]
    coverage.check(alone)
    assert [(f.code, f.severity) for f in alone.audit.flags] == [("coverage_unchecked", "warn")]
    assert "the interpreter alone checked the small sizes" in alone.audit.flags[0].message
    full = _run()
    full.planned = [Backend.interpret]
    full.sizes = "full"  # the trials ran at the full sizes themselves
    coverage.check(full)
    assert full.audit.flags == []
