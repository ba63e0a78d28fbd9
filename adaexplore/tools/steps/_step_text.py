"""Verdicts as a step's instructions show them: each fact once.

An evaluator's verdict on a correct kernel says how it was checked as well as what was found: "correct in 5/5
trials in the interpreter at small sizes", "compiles for sm_90 at the small sizes (…) and the task's full ones"
and, without a GPU, "no GPU timed it here" (followed by the kernel's estimate)
(executor/pipeline/stages/result.py). Every kernel of a run is checked the same way, so a step that lists several
verdicts would say those clauses once per kernel. In a step:

- the clause on where a kernel was compiled is left out wherever its static cost clause follows, which names
  the sizes it was compiled at (`static cost kernel at full sizes: …`) and the task's text lists the small ones;
- the kernel to edit keeps the rest of its verdict whole, and so do a large step's pool kernels;
- the earlier kernels of a small step's line also leave out that they passed all their trials (their status
  says so) and where those ran, and that no GPU timed them, which the kernel to edit's verdict says for all.

Every other clause (the static cost, speed, warnings, what failed) is kept as the evaluator wrote it.
"""

from __future__ import annotations

import re

__all__ = ["step_verdict"]

# "(not executed)" after the compile clause (a compile-only verdict) says something the static cost does not:
# such a clause does not match, and is kept.
_COMPILED = re.compile(
    r"compiles for sm_90 at (the small sizes \([^;]*\)( and the task's full ones|, not the task's full ones)"
    r"|the task's sizes)"
)
_TRIALS = re.compile(
    r"correct in (\d+)/\1 trials (in the interpreter at (?:small sizes|the task's full sizes)|on the GPU|on GPU \d+)"
)
_UNTIMED = "no GPU timed it here"
_COST = "static cost "


def step_verdict(verdict: str, *, method: bool = True) -> str:
    """`verdict` ("status: message") as a step shows it. `method=False`: also without the clause on its trials and
    the one saying that no GPU timed it (another verdict of the step says how they ran)."""
    status, sep, message = verdict.partition(": ")
    if not sep:
        return verdict
    clauses = message.split("; ")
    costed = any(clause.startswith(_COST) for clause in clauses)
    kept = []
    for clause in clauses:
        if costed and _COMPILED.fullmatch(clause):
            continue
        if not method:
            if clause == _UNTIMED:
                continue
            if _TRIALS.fullmatch(clause):
                continue  # "ok" says it passed every trial; where they ran, the kernel to edit says
        kept.append(clause)
    if not kept:
        return status if not method else verdict
    return f"{status}{sep}{'; '.join(kept)}"
