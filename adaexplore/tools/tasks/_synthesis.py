"""Practice tasks for `adaexplore adapt`: synthesized from the installed torch's operators in a worker of the
evaluator (`executor/probes/_synth.py` says how, and what every task must pass)."""

from __future__ import annotations

from adaexplore.config import Settings
from adaexplore.executor import SynthesisReport, SyntheticTask
from adaexplore.executor import synthesize_tasks as _synthesize

__all__ = ["SynthesisReport", "SyntheticTask", "synthesize_tasks"]


async def synthesize_tasks(settings: Settings, count: int, *, seed: int) -> SynthesisReport:
    """Up to `count` checked practice tasks, the same for the same seed and torch.

    Raises:
        RequestError: `count` is negative.
        EvaluatorError: the synthesis worker failed or timed out.
    """
    return await _synthesize(count, seed=seed, settings=settings)
