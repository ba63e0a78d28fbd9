"""What of a timed call's outputs the worker keeps for the judge to check again: a whole copy, or, where the
copies of every rechecked call would not fit in the bytes allowed, a sample of each output's elements.

A sample's positions are drawn after the call has returned, from a seed of fresh system randomness
(`worker/timing/_sampler.py`), so nothing
the candidate runs can know them; the judge draws the same positions from the same seed (`positions`) and
compares the reference's values there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from adaexplore.executor.worker.confine._faults import OutputTooLarge
from adaexplore.executor.worker.task._taskrun import flatten_output
from adaexplore.executor.worker.timing._sampler import random_seed

__all__ = ["Sampled", "kept_copy", "oversized", "positions"]


@dataclass
class Sampled:
    """`values` of an output of `shape`, at the positions `positions(seed, numel, len(values))` gives."""

    values: torch.Tensor
    seed: int
    shape: list[int]


def positions(seed: int, numel: int, count: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """`count` positions in a flattened tensor of `numel` elements, the same for the same seed in every process
    (drawn on the CPU, whose generator gives the same numbers wherever it runs)."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, numel, (count,), generator=generator, dtype=torch.int64).to(device)


def oversized(tensors: list[Any], limit: int | None, where: str) -> str | None:
    """Why the outputs of `where` are refused before anything copies them: they hold more elements than the
    reference's `limit`; None when they do not."""
    held = [t for t in tensors if isinstance(t, torch.Tensor)]
    count = sum(t.numel() for t in held)
    if limit is None or count <= limit:
        return None
    shapes = ", ".join(str(tuple(t.shape)) for t in held)
    return (
        f"the outputs of {where} hold {count} elements (shapes {shapes}), more than the {limit} of the "
        "reference's; return outputs of the reference's shapes"
    )


def kept_copy(out: Any, limit: int | None, sample: int = 0) -> list[torch.Tensor | Sampled]:
    """A call's outputs as the judge will see them: copies (refused with OutputTooLarge past `limit` elements),
    or with `sample`, that many elements of each output larger than it."""
    tensors = flatten_output(out)
    refused = oversized(tensors, limit, "a timed call")
    if refused:
        raise OutputTooLarge(refused)
    kept: list[torch.Tensor | Sampled] = []
    for tensor in tensors:
        plain = torch.Tensor.detach(tensor)
        if sample and tensor.numel() > sample:
            seed = random_seed()
            where = positions(seed, plain.numel(), sample, plain.device)
            values = torch.Tensor.reshape(plain, (-1,))[where].clone()
            kept.append(Sampled(values=values, seed=seed, shape=list(plain.shape)))
        else:
            kept.append(torch.Tensor.clone(plain))
    return kept
