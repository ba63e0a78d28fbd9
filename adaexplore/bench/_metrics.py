"""A bench's numbers, as the AdaExplore paper counts them, against eager PyTorch and against torch.compile.

Over all T problems of the bench (a problem without a correct kernel counts as speedup 0):
- correct rate: problems with a correct kernel / T;
- mean speedup: the arithmetic mean of min(speedup, 10), incorrect as 0 (the paper's Table 1);
- geometric mean: over the correct problems with a measured speedup, unclamped;
- Fast@p: problems that are correct with min(speedup, 10) strictly above p, / T.

A correct kernel whose speedup was not measured (no GPU) counts for the correct rate only; the speedup
numbers are then None ("not timed"), never a guess. Its estimated speedup is summed apart (`estimated`: the same
numbers over the estimates, labelled as estimates), and where kernels were timed, the mean share of the speed of
light they reach (`sol_fraction`) is given beside them.

A problem whose task is degenerate (its reference's output is a constant, float32 rounding noise or blind to its
inputs, so any kernel that writes that one value is correct and its speedup says nothing) is left out of every
number, T included, and listed apart (`degenerate`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["CLAMP", "FAST_AT", "BenchSummary", "ProblemScore", "SpeedupSummary", "summarize"]

CLAMP = 10.0
FAST_AT = (1.0, 1.2, 2.0)


@dataclass(frozen=True)
class ProblemScore:
    """One problem as the metrics see it."""

    status: str | None  # None: not evaluated yet
    speedup: float | None = None  # vs eager PyTorch
    compile_speedup: float | None = None  # vs torch.compile
    estimated_speedup: float | None = None  # vs eager PyTorch, estimated where nothing timed it
    sol_fraction: float | None = None  # the timed kernel's share of its task's speed of light
    degenerate: bool = False  # its task is degenerate: left out of the numbers
    name: str = ""

    @property
    def correct(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class SpeedupSummary:
    baseline: str  # "eager" or "torch.compile"
    timed: int  # correct problems with a measured speedup
    mean: float  # clamped at CLAMP, incorrect as 0, over all problems
    geomean: float | None  # over the timed correct problems
    fast: dict[float, float]  # p -> share of all problems

    def as_dict(self) -> dict[str, object]:
        return {
            "baseline": self.baseline,
            "timed": self.timed,
            "mean_speedup": self.mean,
            "geomean_speedup": self.geomean,
            **{f"fast_{p:g}": share for p, share in self.fast.items()},
        }


@dataclass(frozen=True)
class BenchSummary:
    problems: int
    done: int
    correct: int
    by_status: dict[str, int]
    eager: SpeedupSummary | None  # None: no correct problem was timed
    compile: SpeedupSummary | None  # None: torch.compile was not timed
    notes: list[str] = field(default_factory=list)
    # the same numbers over the estimated speedups of correct problems nothing timed (never mixed with `eager`)
    estimated: SpeedupSummary | None = None
    # the mean share of the speed of light of the timed correct problems, and how many
    sol_fraction: float | None = None
    sol_timed: int = 0
    # the problems left out because their tasks are degenerate, by name
    degenerate: list[str] = field(default_factory=list)

    @property
    def correct_rate(self) -> float:
        return self.correct / self.problems if self.problems else 0.0

    def as_dict(self) -> dict[str, object]:
        return {
            "problems": self.problems,
            "done": self.done,
            "correct": self.correct,
            "correct_rate": self.correct_rate,
            "by_status": dict(self.by_status),
            "vs_eager": self.eager.as_dict() if self.eager else None,
            "vs_compile": self.compile.as_dict() if self.compile else None,
            "estimated_vs_eager": self.estimated.as_dict() if self.estimated else None,
            "mean_sol_fraction": self.sol_fraction,
            "sol_timed": self.sol_timed,
            "degenerate": list(self.degenerate),
            "notes": list(self.notes),
        }


def _speedups(scores: Sequence[ProblemScore], baseline: str, values: list[float | None]) -> SpeedupSummary | None:
    timed = [(s, v) for s, v in zip(scores, values, strict=True) if s.correct and v is not None and v > 0]
    if not timed:
        return None
    total = len(scores)
    clamped = [min(v, CLAMP) for _, v in timed]
    return SpeedupSummary(
        baseline=baseline,
        timed=len(timed),
        mean=sum(clamped) / total,
        geomean=math.exp(sum(math.log(v) for _, v in timed) / len(timed)),
        fast={p: sum(1 for c in clamped if c > p) / total for p in FAST_AT},
    )


def summarize(every: Sequence[ProblemScore]) -> BenchSummary:
    """The bench's numbers over every problem in `every` whose task is not degenerate (pending ones count as not
    correct); the degenerate ones are listed apart."""
    scores = [s for s in every if not s.degenerate]
    degenerate = [s.name for s in every if s.degenerate]
    by_status: dict[str, int] = {}
    for s in scores:
        key = s.status or "pending"
        by_status[key] = by_status.get(key, 0) + 1
    correct = sum(1 for s in scores if s.correct)
    eager = _speedups(scores, "eager", [s.speedup for s in scores])
    compiled = _speedups(scores, "torch.compile", [s.compile_speedup for s in scores])
    estimated = _speedups(
        scores, "eager (estimated)", [s.estimated_speedup if s.speedup is None else None for s in scores]
    )
    fractions = [s.sol_fraction for s in scores if s.correct and s.speedup is not None and s.sol_fraction is not None]
    notes = []
    untimed = sum(1 for s in scores if s.correct and s.speedup is None)
    if untimed:
        also = (
            f"; {estimated.timed} of them have an estimated speedup, summed apart as an estimate" if estimated else ""
        )
        notes.append(
            f"{untimed} correct problem(s) have no measured speedup (no GPU timing): they count for the correct "
            f"rate only{also}"
        )
    uncompiled = sum(1 for s in scores if s.correct and s.speedup is not None and s.compile_speedup is None)
    if compiled is not None and uncompiled:
        notes.append(
            f"{uncompiled} correct problem(s) have no torch.compile timing (torch.compile of the reference failed, "
            "see their rows): they count as not faster than torch.compile"
        )
    pending = by_status.get("pending", 0)
    if pending:
        notes.append(f"{pending} problem(s) not evaluated yet: they count as not correct")
    if degenerate:
        notes.append(
            f"{len(degenerate)} problem(s) left out of every number above, their tasks being degenerate (any kernel "
            f"that writes one value is correct on them: their speedups say nothing): {', '.join(degenerate)}"
        )
    return BenchSummary(
        problems=len(scores),
        done=len(scores) - pending,
        correct=correct,
        by_status=by_status,
        eager=eager,
        compile=compiled,
        notes=notes,
        estimated=estimated,
        sol_fraction=sum(fractions) / len(fractions) if fractions else None,
        sol_timed=len(fractions),
        degenerate=degenerate,
    )
