"""The inputs of strict timing's calls: the timing seed's inputs times factors that change with every call.

Each floating tensor is multiplied element by element by a run of factors in (15/16, 1], read from a pool
at an offset drawn for that call. The pool is seeded in secret, and the offsets are drawn in secret, so no
call's inputs can be foreseen, and the first tensor's offset is never drawn twice in one measurement, so
no two calls see the same inputs. The factors differ from element to element: a candidate cannot rescale
an output it computed earlier (for a linear task, a single scale on the inputs is a single scale on the
outputs), because no cheap map leads from one call's inputs to another's.

Multiplying by positive factors keeps the inputs' signs and zeros, so a triangular matrix stays
triangular. A tensor that is symmetric in its last two dimensions is scaled as D·X·D instead (one
factor per leading index, then the same factors on its rows and its columns), so it stays symmetric,
and positive definite if it was.

A tensor sorted along its last dimension (a sequence of bin edges, a cumulative table) is sorted again
after scaling, the same way, so it stays sorted: factors that differ from element to element could
swap two close neighbours.

Integer inputs cannot be scaled, and work that depends on them alone could be carried from one call to
the next; so a task with integer (or boolean) inputs has every timed call's inputs drawn anew from its own
`get_inputs()` under a seed drawn in secret, which keeps whatever structure the task gives them.

The pool is built from integer arithmetic alone, and every factor has the form 1 - k/2^24 with k below
2^20, exact in float32: the judge builds the same pool on its own device from the key, and the same
inputs bit for bit from a call's `InputPattern`.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Callable
from typing import Any

import torch

from adaexplore.executor.wire._protocol import InputPattern
from adaexplore.executor.worker.task._taskrun import rebuilt, tensors_in

__all__ = ["PatternSource", "apply_pattern", "factor_pool", "floating_tensors", "has_integer_inputs", "pool_size"]

_SPAN = 1 << 20  # offsets are drawn in [0, _SPAN)
_PRIME = (1 << 31) - 1
_MULTIPLIERS = (1_103_515_245, 2_147_483_629, 1_664_525_013)  # each below _PRIME: products fit in int64
_LOW_BITS = (1 << 20) - 1
_STEP = 2.0**-24
_CHUNK = 1 << 24  # elements of the pool built at once, to bound the temporaries


def floating_tensors(base: list[Any]) -> list[torch.Tensor]:
    """The floating tensors of a call's inputs, in order, looking into lists and tuples (the ones that
    patterns scale)."""
    found: list[torch.Tensor] = []

    def walk(value: Any) -> None:
        if isinstance(value, torch.Tensor):
            if value.is_floating_point():
                found.append(value)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)

    walk(base)
    return found


def _congruent(tensor: torch.Tensor) -> bool:
    """Symmetric in its last two dimensions (scaled as D·X·D so that it stays so)."""
    return (
        tensor.dim() >= 2
        and tensor.shape[-1] == tensor.shape[-2] >= 2
        and bool(torch.equal(tensor, tensor.transpose(-1, -2)))
    )


def _order(tensor: torch.Tensor, congruent: bool) -> int:
    """1 (-1) for a tensor whose every row along the last dimension is sorted ascending (descending) and
    that is not constant, 0 otherwise."""
    if congruent or tensor.dim() == 0 or tensor.shape[-1] < 2 or tensor.numel() == 0:
        return 0
    step = tensor[..., 1:] - tensor[..., :-1]
    rising, falling = bool(torch.all(step >= 0)), bool(torch.all(step <= 0))
    return 0 if rising == falling else (1 if rising else -1)  # both: constant; neither: unsorted


def _extent(tensor: torch.Tensor, congruent: bool) -> int:
    """How many factors a tensor reads from its offset on."""
    return tensor.numel() + (tensor.shape[-1] if congruent else 0)


def pool_size(base: list[Any], congruent: list[bool]) -> int:
    extents = [_extent(t, c) for t, c in zip(floating_tensors(base), congruent, strict=True)]
    return max(extents, default=0) + _SPAN


def factor_pool(key: int, size: int, device: torch.device) -> torch.Tensor:
    """`size` factors in (15/16, 1] as float32, the same for a key on every device: a keyed hash of
    each index, built with integer operations only, every intermediate below 2^62."""
    keys = random.Random(key)
    offset, mix, last = (keys.randrange(1, _PRIME) for _ in range(3))
    pool = torch.empty(size, dtype=torch.float32, device=device)
    a, b, c = _MULTIPLIERS
    for start in range(0, size, _CHUNK):
        stop = min(size, start + _CHUNK)
        h = torch.arange(start, stop, dtype=torch.int64, device=device)
        h = (h + offset) % _PRIME * a % _PRIME
        h = (h ^ mix) * b % _PRIME
        h = (h ^ (h >> 11) ^ last) * c % _PRIME
        pool[start:stop] = 1.0 - (h & _LOW_BITS).to(torch.float64) * _STEP
    return pool


def apply_pattern(
    base: list[Any], pattern: InputPattern, pool: torch.Tensor, out: list[Any] | None = None
) -> list[Any]:
    """The inputs `pattern` names: the floating tensors of `base` (also inside lists and tuples) times
    their factors, into `out`'s buffers when given; the rest as is."""
    index = iter(range(len(pattern.offsets)))

    def scaled(value: Any, buffer: Any) -> Any:
        if isinstance(value, torch.Tensor):
            if not value.is_floating_point():
                return value
            k = next(index)
            out = _scale(value, pool, pattern.offsets[k], pattern.congruent[k], buffer)
            order = pattern.order[k] if pattern.order else 0
            if order:
                # sorted again as it was: the values of the scaled tensor, in the base's order
                out.copy_(torch.sort(out, dim=-1, descending=order < 0).values)
            return out
        if isinstance(value, list | tuple):
            buffers = buffer if buffer is not None else [None] * len(value)
            return rebuilt(value, [scaled(item, b) for item, b in zip(value, buffers, strict=True)])
        return value

    with torch.no_grad():  # an input that requires grad still gets its pattern written into a buffer
        return scaled(base, out)


def _scale(
    tensor: torch.Tensor, pool: torch.Tensor, offset: int, congruent: bool, out: torch.Tensor | None
) -> torch.Tensor:
    # into a buffer of the tensor's own dtype: a bfloat16 input times float32 factors stays bfloat16
    out = torch.empty_like(tensor) if out is None else out
    if tensor.numel() == 0:
        return out
    if not congruent:
        return torch.mul(tensor, pool[offset : offset + tensor.numel()].view(tensor.shape), out=out)
    n = tensor.shape[-1]
    leading = tensor.numel() // (n * n)
    per_matrix = pool[offset : offset + leading].view(*tensor.shape[:-2], 1, 1)
    sides = pool[offset + leading : offset + leading + n]
    torch.mul(tensor, per_matrix, out=out)
    # one product per pair, d_i·d_j, which rounds as d_j·d_i does: the result is exactly symmetric
    return out.mul_(torch.outer(sides, sides))


def has_integer_inputs(base: list[Any]) -> bool:
    """Whether a call's inputs hold tensors that are neither floating nor complex (ids, indices, masks)."""
    return any(not (t.is_floating_point() or t.is_complex()) for t in tensors_in(base))


class PatternSource:
    """The patterns of one measurement's calls, drawn from a source seeded in secret. With `redraw` (a task
    with integer inputs: a seed -> that seed's get_inputs()), each call's inputs are drawn anew instead."""

    def __init__(self, base: list[Any], redraw: Callable[[int], list[Any]] | None = None) -> None:
        self._draw = random.Random(secrets.randbits(128))
        self.redraw = redraw
        tensors = [] if redraw is not None else floating_tensors(base)
        self.key = self._draw.getrandbits(62)
        self.congruent = [_congruent(t) for t in tensors]
        self.order = [_order(t, c) for t, c in zip(tensors, self.congruent, strict=True)]
        self._used: set[int] = set()
        self.pool = factor_pool(self.key, pool_size(base, self.congruent), tensors[0].device) if tensors else None

    def inputs(self, base: list[Any], out: list[Any] | None) -> tuple[InputPattern, list[Any]] | None:
        """The next call's pattern and inputs (into `out`'s buffers where they are scaled), or None where
        calls take the base itself (no floating inputs, and no redraw)."""
        if self.redraw is not None:
            seed = self._draw.getrandbits(62)
            pattern = InputPattern.model_construct(key=self.key, offsets=[], congruent=[], order=[], seed=seed)
            return pattern, self.redraw(seed)
        if self.pool is None:
            return None
        pattern = self.next()
        return pattern, apply_pattern(base, pattern, self.pool, out=out)

    def next(self) -> InputPattern:
        offsets = [self._draw.randrange(_SPAN) for _ in self.congruent]
        if offsets:
            while offsets[0] in self._used:  # never the same inputs twice
                offsets[0] = self._draw.randrange(_SPAN)
            self._used.add(offsets[0])
            if len(self._used) == _SPAN:  # past a million calls: start the offsets over
                self._used.clear()
        order = list(self.order) if any(self.order) else []
        return InputPattern.model_construct(
            key=self.key, offsets=offsets, congruent=list(self.congruent), order=order, seed=None
        )
