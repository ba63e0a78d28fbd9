"""Which way a dot's second operand lies in memory, read from a compiled kernel's TritonGPU IR (TTGIR).

A `tl.dot(a, b)` reads `b` as a K x N tile. Whether the tile's elements are contiguous along K (the weight of a
linear layer, `x @ w.T`: "K-major") or along N (a row-major right-hand matrix, `a @ b`) changes how fast the
dot runs on Hopper, by the unit that does it:

- the tensor cores' warp-group MMA reads 32-bit operands (tf32, and the three products of tf32x3) from shared
  memory K-major only, so an N-major tile is rewritten through registers at every step of the loop;
- an `ieee` dot (fused multiply-adds on the CUDA cores) reads each thread's row of `b` from shared memory in one
  wide load when the tile is N-major, and element by element when it is K-major.

The compiler's layout of the global load that fills the tile says it: `order = [0, 1]` (K fastest) or
`order = [1, 0]` (N fastest), on the `tt.load` or the pipelined `ttg.async_copy_global_to_local` whose pointers
have the tile's shape. Tensor-descriptor (TMA) loads carry no such layout and answer nothing.
"""

from __future__ import annotations

import re

__all__ = ["b_tile_k_major"]

_BLOCKED = re.compile(r"^(#blocked\d*)\s*=\s*#ttg\.blocked<\{[^}]*order\s*=\s*\[(\d+),\s*(\d+)\]")
_LOAD = re.compile(
    r"(?:tt\.load|ttg\.async_copy_global_to_local)\b[^\n]*?tensor<(\d+)x(\d+)x!tt\.ptr<[^>]+>,\s*(#blocked\d*)>"
)


def b_tile_k_major(ttgir: str, dot_tile: tuple[int, int, int] | None) -> bool | None:
    """True: the loads that fill the dot's K x N operand are contiguous along K; False: along N; None: no dot, no
    global load of that shape (TMA, an operand computed in registers), or loads of that shape that disagree, or a
    square tile that an M x K operand of the same shape would be mistaken for."""
    if dot_tile is None or not ttgir:
        return None
    m, n, k = dot_tile
    if (m, k) == (k, n):  # the A and B tiles have the same shape: their loads cannot be told apart
        return None
    orders: dict[str, tuple[int, int]] = {}
    for line in ttgir.splitlines():
        found = _BLOCKED.match(line.strip())
        if found:
            orders[found.group(1)] = (int(found.group(2)), int(found.group(3)))
    seen: set[bool] = set()
    for rows, cols, layout in _LOAD.findall(ttgir):
        if (int(rows), int(cols)) == (k, n) and layout in orders:
            seen.add(orders[layout][0] == 0)
    return seen.pop() if len(seen) == 1 else None
