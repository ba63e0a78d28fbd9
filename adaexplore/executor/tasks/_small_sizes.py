"""Small sizes for a task module that has none: its module-level integer sizes scaled down, then checked by
running the reference at those sizes in a sandboxed worker of role `sizes` (never in the caller's process;
`probes/_size_prober.py` starts it, `worker/judge/_size_probe.py` runs it).

Sizes are read from the module's text (`batch_size = 16`, `depth, height, width = 24, 48, 48`, `n = 2 * m`,
`hidden_layer_sizes = [32768, 32768]`). Every size is scaled, those a module-level tuple or list is built from
(`bias_shape = (out_channels, 1, 1)`) too: the worker applies SMALL_SIZES to the module's own assignments, so what
the module computes from them follows. A tuple or list of literal integers is scaled element for element, each
element as a size under the sequence's name (SMALL_SIZES holds the small list). Structural numbers (kernel sizes,
strides, padding, dilation, groups, heads, axes, layer counts) and any integer of at most 8 stay as written (a
`dim` of 393216 is a size, not an axis); the batch becomes 2, and every other size is capped, smallest cap first,
at a multiple of what it shares with the groups, heads, chunks and splits, so that channels stay divisible by
groups and an embedding by its heads (spatial sizes and lengths excepted). At each cap, a candidate that keeps what
a group computes comes first: the groups (heads, chunks) are divided by the factor their multiples are divided by,
so that the channels per group stay at their full-size count and at least two groups remain (a GroupNorm of 8192
channels in 512 groups becomes 32 channels in 2 groups at the cap of 33, where the plain candidates give 512
channels in 512 groups of one, whose output is zero). Names derived from others (`n = 2 * m`) are recomputed from
the scaled values. The probe tries the candidates in turn and keeps the first under which
`Model(*get_init_inputs())(*get_inputs())` runs, returns non-empty tensors, takes at most the budget in CPU time,
and keeps the task (`executor/worker/judge/_degenerate.py`: its output is not a constant, float32 rounding noise,
or the same for two draws of its inputs); a kernel larger than its input, or a layer whose width is fixed by a
full-size input, shows up there as an error and the next, larger candidate is tried. Where every candidate that
runs makes the task degenerate, the probe checks the task at its full sizes when the CPU can afford it: a task that
is degenerate there too keeps the smallest sizes, named as degenerate; one that is not is checked at full size.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

from adaexplore.domain import Degeneracy, SizeValue

__all__ = [
    "BATCH_NAME",
    "BUDGET_S",
    "FULL_CHECK_BUDGET_S",
    "FULL_CHECK_MEMORY",
    "FULL_SIZES",
    "Attempt",
    "Candidate",
    "Derivation",
    "candidates",
    "module_sizes",
    "sequence_sizes",
    "with_small_sizes",
]

BUDGET_S = 2.0  # the most one reference forward may take on the CPU at the chosen sizes
# the most CPU seconds a check of whether a task is degenerate at its full sizes may be expected to take (four
# forwards and two draws of its inputs, estimated from what its reference does there); a dearer one is not run
FULL_CHECK_BUDGET_S = 4.0
FULL_CHECK_MEMORY = 1 << 30  # and the most memory it may be expected to hold, in bytes
FULL_SIZES = "the task's full sizes"  # how the probe's check at the module's own sizes is named
# a size just above a power of two first, so that kernels meet a ragged tail; the power itself where the
# model needs even sizes (pooling pyramids, skip connections)
_CAPS = (17, 16, 33, 32, 65, 64, 129, 128, 257, 256)
_BATCH_CAP = 2  # a batch of two: enough to tell rows apart, cheap in the interpreter
_KEPT_BELOW = 8  # integers up to this stay: a batch of 2, a dim of 1, a kernel of 3
_STRUCTURAL = re.compile(
    r"kernel|stride|pad|dilation|group|head|axis|layers?$|pool|window|ksize|^k$|top_?k|order|scale|factor",
    re.IGNORECASE,
)
_DIVIDES = re.compile(r"group|head|chunk|split", re.IGNORECASE)  # numbers other sizes must be multiples of
_SPATIAL = re.compile(r"height|width|depth|^[hwdl]$|length|len$|seq", re.IGNORECASE)  # never a multiple of groups
_BATCH = BATCH_NAME = re.compile(r"batch|^n$|^bs$", re.IGNORECASE)


# what one candidate assigns: a name to its small value, or a list or tuple of sizes to its small elements
Sizes = dict[str, int | list[int]]


class Attempt(BaseModel):
    """One candidate as the probe ran it."""

    model_config = ConfigDict(extra="forbid")

    how: str
    sizes: Sizes
    ok: bool
    reason: str | None = None  # why it was refused: the error, empty outputs, or the time over budget
    build_s: float | None = None  # importing the module, building Model and drawing the inputs
    forward_s: float | None = None  # one reference forward, in CPU seconds (all threads), whatever the load
    # the task is degenerate at these sizes (its reference's output is a constant, noise or blind to its inputs)
    degenerate: Degeneracy | None = None
    # not so under the probe's weights, but under a second draw of them (the judge draws its own)
    fragile: Degeneracy | None = None
    check_s: float | None = None  # the check that it is not, in CPU seconds


class Derivation(BaseModel):
    """What the derivation chose, and why."""

    model_config = ConfigDict(extra="forbid")

    sizes: Sizes | None  # None: no sizes were found; {}: the module's own sizes are already small
    reason: str | None = None  # why none were found
    attempts: list[Attempt] = []
    seconds: float = 0.0  # wall time of the whole derivation, probe start included
    # the reference ran without a sandbox: the settings say executor.sandbox = 'none', as for candidates
    unconfined: bool = False
    # every candidate that ran made the task degenerate: the sizes kept are the smallest of them, and this says how
    # the task is degenerate (at its full sizes where they were checked)
    degenerate: Degeneracy | None = None
    # every candidate that ran made the task degenerate under some draw of the weights, and the sizes kept are the
    # first that do not under the probe's own: how it is under the other
    fragile: Degeneracy | None = None

    @property
    def chosen(self) -> Attempt | None:
        found = next((a for a in self.attempts if a.ok), None)
        if found is None and (self.degenerate is not None or self.fragile is not None):
            return next((a for a in self.attempts if not a.ok and a.sizes == self.sizes), None)
        return found

    def note(self) -> str:
        """One sentence for the caller: which sizes were derived and how, or why none were."""
        unconfined = "; the reference ran without a sandbox (executor.sandbox is 'none')" if self.unconfined else ""
        return self._note() + unconfined

    def _note(self) -> str:
        chosen = self.chosen
        if self.sizes is None or chosen is None:
            return f"no small sizes derived: {self.reason}; CPU checks run at the task's full sizes"
        if not self.sizes:
            degenerate = f"; {self.degenerate.line()}" if self.degenerate is not None else ""
            return (
                f"no small sizes needed: the reference's forward takes {chosen.forward_s:.2f} CPU s at the "
                f"module's own sizes{degenerate}"
            )
        sizes = ", ".join(f"{name}={value}" for name, value in self.sizes.items())
        if self.degenerate is not None:
            full = "and at its full sizes" if self.degenerate.sizes == "full" else "(its full sizes too dear to check)"
            return (
                f"SMALL_SIZES derived ({chosen.how}): {sizes}, though the task is degenerate at every size tried "
                f"{full}: {self.degenerate.line()}; give small_sizes to choose others"
            )
        fragile = (
            f"; under another draw of the weights, the task is degenerate at every size tried ({self.fragile.what()}): "
            "the judge's own draws may make it so"
            if self.fragile is not None
            else ""
        )
        return (
            f"SMALL_SIZES derived ({chosen.how}): {sizes}; the reference ran there in {chosen.forward_s:.2f} CPU s "
            f"(after {len(self.attempts)} attempt(s)){fragile}; give small_sizes to choose others"
        )


class Candidate(BaseModel):
    """One size set to try, and how it was made."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    how: str
    sizes: Sizes


def _value(node: ast.expr, env: dict[str, int]) -> int | None:
    """The integer an expression of integer literals, known names and + - * // % ** evaluates to, else None."""
    if isinstance(node, ast.Constant):
        value = node.value
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    if isinstance(node, ast.Name):
        return env.get(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _value(node.operand, env)
        return None if inner is None else -inner
    if isinstance(node, ast.BinOp):
        left, right = _value(node.left, env), _value(node.right, env)
        if left is None or right is None:
            return None
        ops = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__}
        if type(node.op) in ops:
            return ops[type(node.op)](left, right)
        if isinstance(node.op, ast.FloorDiv | ast.Mod) and right != 0:
            return left // right if isinstance(node.op, ast.FloorDiv) else left % right
        if isinstance(node.op, ast.Pow) and 0 <= right <= 64:
            return left**right
    return None


def _assignments(tree: ast.Module) -> list[tuple[str, ast.expr]]:
    """Module-level `name = expr` pairs, in order, tuple assignments split element-wise."""
    pairs: list[tuple[str, ast.expr]] = []
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            pairs.append((node.target.id, node.value))
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if isinstance(target, ast.Name):
                pairs.append((target.id, node.value))
            elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                if len(target.elts) == len(node.value.elts):
                    pairs += [
                        (t.id, v) for t, v in zip(target.elts, node.value.elts, strict=True) if isinstance(t, ast.Name)
                    ]
    return pairs


def module_sizes(source: str) -> tuple[dict[str, int], dict[str, ast.expr]]:
    """(sizes, derived): the module's integer names with their values, and the expressions of those computed
    from other names. Raises SyntaxError on a module that does not parse."""
    env: dict[str, int] = {}
    derived: dict[str, ast.expr] = {}
    for name, expr in _assignments(ast.parse(source)):
        value = _value(expr, env)
        if value is None:
            env.pop(name, None)
            derived.pop(name, None)
            continue
        env[name] = value
        if any(isinstance(n, ast.Name) for n in ast.walk(expr)):
            derived[name] = expr
        else:
            derived.pop(name, None)
    return env, derived


def sequence_sizes(source: str) -> dict[str, list[int]]:
    """Module-level names bound to a tuple or list of integer literals (`hidden_layer_sizes = [32768, 32768]`,
    `input_shape = (8192 * 2,)`), each with its elements (the last assignment's); the derivation scales them
    element for element."""
    found: dict[str, list[int]] = {}
    for name, expr in _assignments(ast.parse(source)):
        found.pop(name, None)
        if isinstance(expr, ast.Tuple | ast.List) and expr.elts:
            values = [_value(e, {}) for e in expr.elts]
            if all(v is not None for v in values):
                found[name] = [v for v in values if v is not None]
    return found


def _capped(value: int, cap: int, keep: int) -> int:
    """`value` lowered to at most `cap`, a multiple of what it shares with `keep` (that step itself where the
    step exceeds the cap)."""
    if value <= cap:
        return value
    step = math.gcd(value, keep) or 1
    return max(step, cap // step * step)


def candidates(source: str) -> tuple[list[Candidate], str | None]:
    """The size sets to try, smallest first, or a reason there are none (SyntaxError on unparsable text)."""
    sizes, derived = module_sizes(source)
    leaves = {n: v for n, v in sizes.items() if n not in derived and n.isidentifier() and not n.startswith("_")}
    sequences = {
        n: v
        for n, v in sequence_sizes(source).items()
        if n.isidentifier() and not n.startswith("_") and not _STRUCTURAL.search(n) and max(v) > _KEPT_BELOW
    }
    divisors = [v for n, v in leaves.items() if 0 < v and _DIVIDES.search(n)]
    keep = math.lcm(*divisors) if divisors else 1
    keep = keep if keep <= 4096 else 1
    scalable = {n: v for n, v in leaves.items() if v > _KEPT_BELOW and not _STRUCTURAL.search(n)}
    if not scalable and not sequences and not any(_BATCH.search(n) and v > _BATCH_CAP for n, v in leaves.items()):
        why = "none is larger than 8 or all are structural" if sizes else "it defines no module-level integer"
        return [Candidate(how=f"the module's own sizes: {why}", sizes={})], None
    found: list[Candidate] = []

    def add(how: str, chosen: dict[str, int], lists: dict[str, list[int]]) -> None:
        env = dict(sizes) | chosen
        for name, expr in derived.items():  # in module order, so a chain recomputes in turn
            value = _value(expr, env)
            if value is not None:
                env[name] = value
        changed: Sizes = {n: v for n, v in env.items() if v != sizes.get(n) and n in sizes}
        changed |= {n: v for n, v in lists.items() if v != sequences[n]}
        if changed and all(c.sizes != changed for c in found):
            found.append(Candidate(how=how, sizes=changed))

    batch = {n: _capped(v, _BATCH_CAP, 1) for n, v in leaves.items() if _BATCH.search(n) and v > _BATCH_CAP}
    lowered = f", the batch at {_BATCH_CAP}" if batch else ""
    groups = {n: v for n, v in leaves.items() if 1 < v and _DIVIDES.search(n)}
    for cap in _CAPS:
        # at a power of two a size also keeps the factors of two it shares with the cap: a channel count
        # split in four and then in groups stays divisible by both
        even = cap if cap & (cap - 1) == 0 else 1
        scaled = {n: _capped(v, cap, math.lcm(even, 1 if _SPATIAL.search(n) else keep)) for n, v in scalable.items()}
        lists = {
            n: [_capped(e, cap, math.lcm(even, 1 if _SPATIAL.search(n) else keep)) if e > _KEPT_BELOW else e for e in v]
            for n, v in sequences.items()
        }
        shares = _group_shares(groups, scalable, keep, cap)
        if shares is not None:
            names = ", ".join(f"{n}={v}" for n, v in shares.items() if n in groups)
            how = f"sizes capped at {cap}{lowered}, {names} so that each group keeps its full-size share"
            add(how, scaled | shares | batch, lists)
        add(f"sizes capped at {cap}{lowered}", scaled | batch, lists)
    if batch:
        add(f"only the batch lowered, to {_BATCH_CAP}", batch, {})
    if not found:
        return [], "scaling changes none of its sizes"
    return found, None


def _group_shares(groups: dict[str, int], scalable: dict[str, int], keep: int, cap: int) -> dict[str, int] | None:
    """The groups (heads, chunks) and their multiples divided by one factor, the least under which the multiples
    fit `cap` while every group count stays at least 2, so that each group keeps as many channels as at full size
    and a kernel still meets more than one group; None where no size is a multiple of the groups, where the
    multiples fit as they are (the plain candidate keeps the groups then), or where no such factor exists."""
    multiples = {
        n: v
        for n, v in scalable.items()
        if not _SPATIAL.search(n) and not _BATCH.search(n) and keep > 1 and v % keep == 0 and v > keep
    }
    common = math.gcd(*groups.values()) if groups else 1
    if common <= 1 or not multiples:
        return None
    largest = max(multiples.values())
    factors = [f for f in range(1, common + 1) if common % f == 0]
    factor = next((f for f in factors if largest // f <= cap and min(groups.values()) // f >= 2), None)
    if factor is None or factor == 1:
        return None
    return {n: v // factor for n, v in groups.items()} | {n: v // factor for n, v in multiples.items()}


def with_small_sizes(source: str, sizes: Mapping[str, SizeValue], how: str) -> str:
    """The module's text with a `SMALL_SIZES` assignment appended (a later assignment overrides an earlier one)."""
    body = ", ".join(f"{name!r}: {value!r}" for name, value in sizes.items())
    return f"{source.rstrip()}\n\n# Small sizes for CPU checks ({how}).\nSMALL_SIZES = {{{body}}}\n"
