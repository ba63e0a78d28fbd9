"""Which timed calls are checked again: chosen one by one after each call has returned, from the system's
randomness as this module took it at import, so that nothing a candidate runs in the worker's process can know
or steer the choice."""

from __future__ import annotations

import os

__all__ = ["Sampler", "caught", "random_seed"]

# The system's randomness, taken at import, before any candidate: a builtin function, whose behaviour no Python
# code can change, held in a module whose names the Guard follows. (`secrets.randbelow` or `random` would not do:
# a candidate could replace them in their modules and keep only its honest calls; replacing this name is caught.)
_URANDOM = os.urandom


def _randbelow(n: int) -> int:
    """A uniform integer in [0, n), drawn from `_URANDOM` (rejection sampling: no bias)."""
    bits = max(1, n.bit_length())
    size = (bits + 7) // 8
    while True:
        value = int.from_bytes(_URANDOM(size), "little") >> (8 * size - bits)
        if value < n:
            return value


class Sampler:
    """Chooses `want` of the next `total` calls, uniformly, deciding each call after it has returned from a
    fresh draw of the system's randomness (selection sampling): while a call runs, nothing in the process
    knows whether its outputs will be kept, and no state in the process says which later calls will be. A
    kernel wrong in a share `p` of the calls goes unseen with probability at most (1 - p) ** want. `taken`
    lists the chosen calls, numbered from 0 among the `total`."""

    def __init__(self, want: int, total: int) -> None:
        self.left = max(0, min(want, total))
        self.remaining = max(0, total)
        self.total = max(0, total)
        self.taken: list[int] = []

    def take(self) -> bool:
        if self.remaining <= 0:
            return False
        keep = _randbelow(self.remaining) < self.left
        if keep:
            self.taken.append(self.total - self.remaining)
        self.remaining -= 1
        self.left -= keep
        return keep


def caught(want: int, share: float = 0.1) -> float:
    """The probability that rechecking `want` calls catches a kernel wrong in `share` of them."""
    return 1.0 - (1.0 - share) ** want


def random_seed() -> int:
    """A 63-bit seed from `_URANDOM` (the positions of a sampled output's kept elements)."""
    return int.from_bytes(_URANDOM(8), "little") >> 1
