"""Tasks whose forward draws random numbers (KernelBench Level 3 problem 35's LSTM draws its initial state with
`torch.randn` in forward): found by a forward seeded otherwise than the first trial's, and named in a task flag.

Every trial's forward, the reference's and the candidate's, runs right after the trial's seed is set
(`task/_taskrun.seed_forward`), so such a task's reference is the same on every run and a kernel that draws the
same numbers the same way matches it. A float64 copy of the model would draw other numbers (PyTorch's normal
draws differ by dtype), so such a task's reference runs in its own dtype; and the timed calls, which are not
seeded, are not checked again (the pipeline's timing stage reads the flag)."""

from __future__ import annotations

import torch

from adaexplore.domain import DRAWS_IN_FORWARD, AuditFlag, Tolerance
from adaexplore.executor.worker.judge._compare import compare

__all__ = ["other_seed", "random_forward_flag"]


def other_seed(seed: int) -> int:
    """A seed other than a trial's, for the forward that tells whether the task draws random numbers."""
    return (seed + 1) % 2**32


def random_forward_flag(
    other: list[torch.Tensor], first: list[torch.Tensor], tolerances: list[Tolerance], *, float64: bool
) -> AuditFlag | None:
    """The flag of a task whose forward under another seed (`other`) misses its first trial's (`first`, on the
    same inputs) by more than the tolerance, or None where it draws nothing that shows."""
    same = len(other) == len(first) and all(
        o.shape == f.shape and compare(o, f, tol).passed for o, f, tol in zip(other, first, tolerances, strict=False)
    )
    if same:
        return None
    own = (
        "; its reference runs in the task's own dtype, since a float64 copy of the model would draw other numbers"
        if float64
        else ""
    )
    return AuditFlag(
        code=DRAWS_IN_FORWARD,
        severity="info",
        message="the task draws random numbers inside forward (under another seed its output differs), so each "
        "trial's forward, the reference's and the candidate's, runs right after the trial's seed is set: a kernel "
        "matches only if it draws the same numbers the same way (the same torch.randn calls and shapes, in the same "
        f"order, on the same device); the outputs of timed calls, which are not seeded, are not checked again{own}",
    )
