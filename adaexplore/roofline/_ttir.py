"""What a compiled Triton kernel does, read from its Triton IR (TTIR) and the values of one launch's arguments.

A kernel's TTIR, as Triton prints it, is small and regular: scalar integer arithmetic on the arguments and the
program id, `scf.for` loops whose bounds that arithmetic computes, and block operations (`tt.load`, `tt.store`,
`tt.dot`) on tensors of known shape. Walking it with the launch's integer arguments gives, per program, the
FLOPs of every `tl.dot` by precision and the bytes every load and store asks for, and from which tensor
argument (a pointer's origin is followed through `tt.splat`, `tt.addptr`, loop-carried values and the like).
Nothing is executed and no data is read: a loop bound that depends on loaded data, or a branch on a tensor, is
guessed (one trip; both branches averaged) and the result says it is not exact.

The walk runs for a few programs spread over the grid (all of them when there are few) and scales their mean
to the whole grid, so a persistent kernel (`range(pid, tiles, NUM_SMS)`) or a ragged last row of programs is
counted as it runs.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["KernelIR", "ProgramCounts", "count_launch", "parse_ttir"]

_LOC = re.compile(r"\s+loc\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)")
_RESULTS = re.compile(r"^((?:%[\w.$-]+(?::\d+)?)(?:\s*,\s*%[\w.$-]+(?::\d+)?)*)\s*=\s*(\"?[\w.]+\"?)(.*)$")
_OPERAND = re.compile(r"%[\w.$-]+(?:#\d+)?")
_FUNC = re.compile(r"tt\.func\s+(?:public\s+|private\s+|nested\s+)?@([\w.$-]+)\((.*)\)")
_ARG = re.compile(r"(%[\w.$-]+)\s*:\s*([^,{]+)")
_TENSOR = re.compile(r"tensor<([^>]*(?:<[^>]*>)?[^>]*)>")
_ELEMENT_BYTES = {"f64": 8, "i64": 8, "f32": 4, "i32": 4, "f16": 2, "bf16": 2, "i16": 2, "i8": 1, "i1": 1}


@dataclass
class Op:
    results: list[str]
    name: str
    text: str  # the rest of the line: operands, attributes, types
    regions: list[list[Op]] = field(default_factory=list)
    # block arguments of each region (`^bb0(%a: i32)`: scf.while's after-region, a function's body)
    block_args: list[list[str]] = field(default_factory=list)

    def operands(self) -> list[str]:
        head = _split_types(self.text)[0]
        return _OPERAND.findall(head)

    def types(self) -> str:
        return _split_types(self.text)[1]


@dataclass
class Function:
    name: str
    args: list[str]  # SSA names without the %, in order
    body: list[Op]


@dataclass
class KernelIR:
    functions: dict[str, Function]
    entry: str


def _split_types(text: str) -> tuple[str, str]:
    """An op's text cut at its type signature: the ` : ` that is not inside <>, (), [] or {}."""
    depth = 0
    for i, ch in enumerate(text):
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        elif ch == ":" and depth == 0 and text[i - 1 : i] == " " and text[i + 1 : i + 2] == " ":
            return text[:i], text[i + 1 :]
    return text, ""


def _clean(line: str) -> str:
    previous = None
    while previous != line:
        previous, line = line, _LOC.sub("", line)
    return line.strip()


def _result_names(spec: str) -> list[str]:
    names: list[str] = []
    for part in spec.split(","):
        part = part.strip()
        name, _, count = part.partition(":")
        if count:
            names.extend(f"{name}#{i}" for i in range(int(count)))
        else:
            names.append(name)
    return names


_parsed: dict[str, KernelIR] = {}


def parse_ttir(text: str) -> KernelIR:
    """The functions of a TTIR module (cached by the text's hash).

    Raises:
        ValueError: the text holds no `tt.func`.
    """
    digest = hashlib.sha256(text.encode()).hexdigest()
    found = _parsed.get(digest)
    if found is not None:
        return found
    functions: dict[str, Function] = {}
    entry = None
    # the stack of open regions: (the op that owns it or None for a function body, its list of ops)
    stack: list[tuple[Op | None, list[Op]]] = []
    current_fn: Function | None = None
    for raw in text.splitlines():
        if raw.startswith("#") or not raw.strip():
            continue
        line = _clean(raw)
        if line in ("module {", "module attributes {") or line.startswith("module "):
            continue
        if line.startswith("tt.func"):
            match = _FUNC.search(line)
            if match is None:
                continue
            args = [a.lstrip("%") for a, _ in _ARG.findall(match.group(2))]
            current_fn = Function(match.group(1), args, [])
            functions[current_fn.name] = current_fn
            if entry is None and "public" in line.split("@")[0]:
                entry = current_fn.name
            stack = [(None, current_fn.body)]
            continue
        if current_fn is None:
            continue
        if line.startswith("}"):
            if not stack:
                continue
            owner, _ = stack.pop()
            rest = line[1:].strip()
            if rest.endswith("{") and owner is not None:  # `} else {`, `} do {`
                region: list[Op] = []
                owner.regions.append(region)
                owner.block_args.append([])
                stack.append((owner, region))
            if not stack:
                current_fn = None
            continue
        if line.startswith("^bb"):
            inner = line[line.find("(") + 1 : line.rfind(")")]
            names = [a.lstrip("%") for a, _ in _ARG.findall(inner)]
            owner = stack[-1][0] if stack else None
            if owner is not None and owner.block_args:
                owner.block_args[-1] = names
            continue
        match = _RESULTS.match(line)
        if match:
            op = Op(_result_names(match.group(1)), match.group(2).strip('"'), match.group(3).strip())
        else:
            name, _, rest = line.partition(" ")
            name = name.split("(")[0]
            op = Op([], name.strip('"'), rest.strip() if name == line.split(" ")[0] else line[len(name) :])
        if stack:
            stack[-1][1].append(op)
        if line.endswith("{"):
            region = []
            op.regions.append(region)
            op.block_args.append([])
            stack.append((op, region))
    if not functions:
        raise ValueError("no tt.func in the Triton IR")
    ir = KernelIR(functions, entry or next(iter(functions)))
    _parsed[digest] = ir
    return ir


# ---- the walk ------------------------------------------------------------------------------------------
@dataclass
class ProgramCounts:
    """What programs do, summed (and scaled) over the programs counted."""

    dot_flops: dict[str, float] = field(default_factory=dict)
    # issue slots of the CUDA cores' lanes for element-wise work on blocks (float and integer arithmetic), and
    # operations of the special-function units (exp, log, sqrt, sin ...), element by element
    simt: float = 0.0
    special: float = 0.0
    # bytes asked for by loads and stores, by the tensor argument they address ("" when unknown)
    loads: dict[str, float] = field(default_factory=dict)
    stores: dict[str, float] = field(default_factory=dict)
    dot_tile: tuple[int, int, int] | None = None
    exact: bool = True
    guesses: list[str] = field(default_factory=list)

    def add(self, other: ProgramCounts, times: float) -> None:
        for mine, theirs in ((self.dot_flops, other.dot_flops), (self.loads, other.loads), (self.stores, other.stores)):
            for key, value in theirs.items():
                mine[key] = mine.get(key, 0.0) + value * times
        self.simt += other.simt * times
        self.special += other.special * times
        if other.dot_tile is not None and (
            self.dot_tile is None or math.prod(other.dot_tile) < math.prod(self.dot_tile)
        ):
            self.dot_tile = other.dot_tile
        self.exact = self.exact and other.exact
        for guess in other.guesses:
            if guess not in self.guesses:
                self.guesses.append(guess)

    def guess(self, what: str) -> None:
        self.exact = False
        if what not in self.guesses:
            self.guesses.append(what)


_INT_TYPES = re.compile(r"^(i\d+|index)$")


def _element(type_text: str) -> tuple[int, int, str]:
    """(elements, bytes per element, element type) of a tensor, pointer or scalar type."""
    type_text = type_text.strip()
    tensor = _TENSOR.search(type_text)
    if tensor:
        parts = tensor.group(1).split("x")
        dims = []
        for part in parts:
            if part.isdigit():
                dims.append(int(part))
            else:
                break
        element = "x".join(parts[len(dims) :])
        count = math.prod(dims) if dims else 1
    else:
        count, element = 1, type_text
    ptr = re.search(r"!tt\.ptr<([\w]+)", element)
    if ptr:
        element = ptr.group(1)
    element = element.strip().rstrip(">").strip()
    if element.startswith("f8") or element.startswith("f4") or element.startswith("f6"):
        return count, 1, "f8"
    return count, _ELEMENT_BYTES.get(element, 4), element


def _dot_precision(element: str, attrs: str) -> str:
    if element.startswith("f8") or element.startswith("f4"):
        return "fp8"
    if element == "bf16":
        return "bf16"
    if element == "f16":
        return "fp16"
    if element == "f64":
        return "fp64"
    if element.startswith("i"):
        return "int8"
    # the IR leaves out the attribute's default, IEEE (fp32 on the CUDA cores); tf32 and tf32x3 are written out
    found = re.search(r"inputPrecision\s*=\s*(\w+)", attrs)
    return found.group(1) if found else "ieee"


def _shape(type_text: str) -> list[int]:
    tensor = _TENSOR.search(type_text)
    if not tensor:
        return []
    dims = []
    for part in tensor.group(1).split("x"):
        if not part.isdigit():
            break
        dims.append(int(part))
    return dims


def _int_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _arith(name: str, args: list[int], text: str) -> int | None:
    a = args[0] if args else 0
    b = args[1] if len(args) > 1 else 0
    if name in ("arith.addi",):
        return a + b
    if name == "arith.subi":
        return a - b
    if name == "arith.muli":
        return a * b
    if name in ("arith.divsi", "arith.divui"):
        return _int_div(a, b) if b else None
    if name in ("arith.remsi", "arith.remui"):
        return a - b * _int_div(a, b) if b else None
    if name == "arith.ceildivsi":
        return -((-a) // b) if b else None
    if name == "arith.floordivsi":
        return a // b if b else None
    if name in ("arith.minsi", "arith.minui"):
        return min(a, b)
    if name in ("arith.maxsi", "arith.maxui"):
        return max(a, b)
    if name == "arith.andi":
        return a & b
    if name == "arith.ori":
        return a | b
    if name == "arith.xori":
        return a ^ b
    if name == "arith.shli":
        return a << b
    if name in ("arith.shrsi", "arith.shrui"):
        return a >> b
    if name in ("arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast", "arith.index_castui"):
        return a
    if name == "arith.select":
        return args[1] if args[0] else args[2]
    if name == "arith.cmpi":
        predicate = text.split(",")[0].strip()
        return int(
            {
                "eq": a == b,
                "ne": a != b,
                "slt": a < b,
                "sle": a <= b,
                "sgt": a > b,
                "sge": a >= b,
                "ult": a < b,
                "ule": a <= b,
                "ugt": a > b,
                "uge": a >= b,
            }.get(predicate, False)
        )
    return None


# operations whose result points where their operands point
_FORWARDS = {
    "tt.splat",
    "tt.addptr",
    "tt.broadcast",
    "tt.expand_dims",
    "tt.reshape",
    "tt.trans",
    "tt.make_tensor_ptr",
    "tt.advance",
    "tt.make_tensor_descriptor",
    "tt.reinterpret_tensor_descriptor",
    "arith.select",
    "tt.bitcast",
    "tt.cat",
    "tt.join",
    "tt.split",
    "tt.int_to_ptr",
    "tt.ptr_to_int",
    "tt.gather",
}
_CONTROL = {"scf.for", "scf.if", "scf.while", "tt.call"}
# issue slots per element of element-wise operations on blocks (one lane's fused multiply-add is one slot); an
# integer division or remainder is a sequence of a dozen or more instructions, a libdevice call (tanh, erf ...)
# a polynomial of about as many
_SIMT_SLOTS = {
    "arith.divsi": 16,
    "arith.divui": 16,
    "arith.remsi": 16,
    "arith.remui": 16,
    "arith.floordivsi": 18,
    "arith.ceildivsi": 18,
    "arith.divf": 4,
    "tt.extern_elementwise": 16,
    "tt.precise_divf": 8,
    "tt.precise_sqrt": 8,
}
_SPECIAL = {
    "math.exp",
    "math.exp2",
    "math.log",
    "math.log2",
    "math.sqrt",
    "math.rsqrt",
    "math.sin",
    "math.cos",
    "math.tanh",
    "math.erf",
    "arith.divf",
}
_FREE = {"tt.splat", "tt.broadcast", "tt.expand_dims", "tt.reshape", "tt.make_range", "arith.constant", "tt.trans"}


class _Walk:
    def __init__(self, ir: KernelIR, pid: tuple[int, int, int], grid: tuple[int, int, int]) -> None:
        self.ir = ir
        self.pid = pid
        self.grid = grid
        self.values: dict[str, int | None] = {}
        self.origins: dict[str, frozenset[str]] = {}
        self.depth = 0

    def value(self, name: str) -> int | None:
        return self.values.get(name)

    def origin(self, names: Iterable[str]) -> frozenset[str]:
        found: frozenset[str] = frozenset()
        for name in names:
            found = found | self.origins.get(name, frozenset())
        return found

    def region(self, ops: list[Op], counts: ProgramCounts) -> list[str]:
        """Walk `ops`; returns the operands of the region's terminator (scf.yield, scf.condition)."""
        for op in ops:
            if op.name in ("scf.yield", "scf.condition", "tt.reduce.return", "tt.scan.return"):
                operands = op.operands()
                return operands[1:] if op.name == "scf.condition" else operands
            self.op(op, counts)
        return []

    def op(self, op: Op, counts: ProgramCounts) -> None:
        name = op.name
        if name == "arith.constant":
            head, types = _split_types(op.text)
            literal = head.strip()
            if _INT_TYPES.match(types.strip()) and re.fullmatch(r"-?\d+", literal):
                self.values[op.results[0]] = int(literal)
            elif literal in ("true", "false"):
                self.values[op.results[0]] = int(literal == "true")
            return
        if name in ("tt.get_program_id", "tt.get_num_programs"):
            axis = "xyz".index(op.text.split()[0][0]) if op.text.split() else 0
            self.values[op.results[0]] = (self.pid if name == "tt.get_program_id" else self.grid)[axis]
            return
        operands = op.operands()
        self._elementwise(op, counts)
        if name.startswith("arith.") and op.results:
            known = [self.value(o) for o in operands]
            if known and all(v is not None for v in known) and not _TENSOR.search(op.types()):
                self.values[op.results[0]] = _arith(name, [v for v in known if v is not None], op.text)
            if name == "arith.select":
                self.origins[op.results[0]] = self.origin(operands[1:])
            return
        if name in _FORWARDS:
            origin = self.origin(operands)
            for result in op.results:
                self.origins[result] = origin
            return
        if name in ("tt.load", "tt.descriptor_load", "tt.descriptor_gather"):
            types = op.types()
            shown = types.split("->")[-1] if name != "tt.load" else types
            count, size, _ = _element(shown)
            self._access(counts.loads, operands[:1], count * size)
            return
        if name in ("tt.store", "tt.descriptor_store", "tt.descriptor_scatter"):
            types = op.types()
            shown = types.split(",")[-1] if name != "tt.store" else types.split(",")[0]
            count, size, _ = _element(shown)
            self._access(counts.stores, operands[:1], count * size)
            return
        if name in ("tt.atomic_rmw", "tt.atomic_cas", "tt.descriptor_reduce"):
            types = op.types()
            pointer = next((o for o in operands if self.origins.get(o)), operands[0] if operands else "")
            count, size, _ = _element(types.split("->")[-1])
            self._access(counts.loads, [pointer], count * size)
            self._access(counts.stores, [pointer], count * size)
            return
        if name in ("tt.dot", "tt.dot_scaled"):
            self._dot(op, counts)
            return
        if name == "scf.for":
            self._for(op, counts)
            return
        if name == "scf.if":
            self._if(op, counts)
            return
        if name == "scf.while":
            self._while(op, counts)
            return
        if name == "tt.call":
            self._call(op, counts)
            return

    def _elementwise(self, op: Op, counts: ProgramCounts) -> None:
        """The CUDA-core work of an element-wise operation on a block (scalar work is one lane's in 32)."""
        name = op.name
        if (
            name in _FREE
            or not op.results
            or not (name.startswith("arith.") or name.startswith("math.") or name in _SIMT_SLOTS)
        ):
            return
        types = op.types()
        shown = types.split("->")[-1]
        if not _TENSOR.search(shown):
            return
        count, size, _ = _element(shown)
        wide = 2 if size == 8 else 1
        counts.simt += count * _SIMT_SLOTS.get(name, 1) * wide
        if name in _SPECIAL:
            counts.special += count

    def _access(self, into: dict[str, float], pointer: list[str], nbytes: float) -> None:
        origin = sorted(self.origin(pointer)) or [""]
        for arg in origin:
            into[arg] = into.get(arg, 0.0) + nbytes / len(origin)

    def _dot(self, op: Op, counts: ProgramCounts) -> None:
        types = op.types()
        sides = types.split("->")[0].split("*")
        if len(sides) < 2:
            return
        a, b = _shape(sides[0]), _shape(sides[1])
        if len(a) < 2 or len(b) < 2:
            return
        m, k, n = a[-2], a[-1], b[-1]
        batch = math.prod(a[:-2]) if len(a) > 2 else 1
        _, _, element = _element(sides[0])
        precision = "fp8" if op.name == "tt.dot_scaled" else _dot_precision(element, op.text)
        counts.dot_flops[precision] = counts.dot_flops.get(precision, 0.0) + 2.0 * batch * m * n * k
        tile = (m, n, k)
        if counts.dot_tile is None or math.prod(tile) < math.prod(counts.dot_tile):
            counts.dot_tile = tile

    def _bind(self, names: list[str], sources: list[str], values: bool = True) -> None:
        for name, source in zip(names, sources, strict=False):
            self.values[name] = self.value(source) if values else None
            self.origins[name] = self.origin([source])

    def _for(self, op: Op, counts: ProgramCounts) -> None:
        match = re.match(r"(%[\w.$-]+)\s*=\s*(%[\w.$#-]+)\s+to\s+(%[\w.$#-]+)\s+step\s+(%[\w.$#-]+)", op.text)
        carried = re.search(r"iter_args\((.*?)\)\s*->", op.text) or re.search(r"iter_args\((.*)\)", op.text)
        pairs = re.findall(r"(%[\w.$-]+)\s*=\s*(%[\w.$#-]+)", carried.group(1)) if carried else []
        names, inits = [p[0] for p in pairs], [p[1] for p in pairs]
        body = op.regions[0] if op.regions else []
        if match is None:
            counts.guess("a loop whose bounds could not be read")
            return
        iv, lb, ub, step = match.groups()
        low, high, stride = self.value(lb), self.value(ub), self.value(step)
        # the induction variable's value on the last trip, where the bounds are known
        last_iv: int | None = None
        if low is None or high is None or not stride:
            trips = 1
            counts.guess("a loop whose trip count depends on data")
        else:
            trips = max(0, -((low - high) // stride))
            last_iv = low + (trips - 1) * stride
        nested = any(o.name in _CONTROL for o in _walk_ops(body))
        first = ProgramCounts()
        self.values[iv] = low
        self.origins[iv] = frozenset()
        self._bind(names, inits)
        yielded = self.region(body, first)
        per_trip = first
        if nested and last_iv is not None and trips > 1:
            last = ProgramCounts()
            self.values[iv] = last_iv
            self._bind(names, inits, values=False)
            self.region(body, last)
            per_trip = ProgramCounts()
            per_trip.add(first, 0.5)
            per_trip.add(last, 0.5)
        counts.add(per_trip, trips)
        for result, init, out in zip(op.results, inits, yielded + [""] * len(inits), strict=False):
            self.values[result] = self.value(init) if trips == 0 else None
            self.origins[result] = self.origin([init, out])

    def _if(self, op: Op, counts: ProgramCounts) -> None:
        operands = op.operands()
        condition = self.value(operands[0]) if operands else None
        branches = op.regions
        if condition is not None and branches:
            chosen = branches[0] if condition else (branches[1] if len(branches) > 1 else [])
            taken = ProgramCounts()
            yielded = self.region(chosen, taken)
            counts.add(taken, 1.0)
            for result, out in zip(op.results, yielded, strict=False):
                self.values[result] = self.value(out)
                self.origins[result] = self.origin([out])
            return
        if branches:
            counts.guess("a branch that depends on data")
            outs: list[list[str]] = []
            for branch in branches:
                taken = ProgramCounts()
                outs.append(self.region(branch, taken))
                counts.add(taken, 1.0 / len(branches))
            for i, result in enumerate(op.results):
                self.values[result] = None
                self.origins[result] = self.origin([o[i] for o in outs if i < len(o)])

    def _while(self, op: Op, counts: ProgramCounts) -> None:
        counts.guess("a while loop (run once)")
        inits = re.findall(r"%[\w.$-]+\s*=\s*(%[\w.$#-]+)", op.text.split(":")[0])
        if op.regions:
            before = op.regions[0]
            names = op.block_args[0] if op.block_args and op.block_args[0] else []
            self._bind(["%" + n for n in names], inits, values=False)
            passed = self.region(before, counts)
            if len(op.regions) > 1:
                after_names = op.block_args[1] if len(op.block_args) > 1 else []
                self._bind(["%" + n for n in after_names], passed, values=False)
                self.region(op.regions[1], counts)
        for result in op.results:
            self.values[result] = None

    def _call(self, op: Op, counts: ProgramCounts) -> None:
        target = re.search(r"@([\w.$-]+)", op.text)
        fn = self.ir.functions.get(target.group(1)) if target else None
        if fn is None or self.depth > 8:
            counts.guess("a call to a function not in the module")
            return
        self.depth += 1
        try:
            self._bind(["%" + a for a in fn.args], op.operands())
            self.region(fn.body, counts)
        finally:
            self.depth -= 1
        for result in op.results:
            self.values[result] = None


def _walk_ops(ops: list[Op]) -> Iterable[Op]:
    for op in ops:
        yield op
        for region in op.regions:
            yield from _walk_ops(region)


def _samples(programs: int, most: int = 6) -> list[int]:
    if programs <= most:
        return list(range(programs))
    picks = {0, programs - 1}
    for i in range(1, most - 1):
        picks.add(programs * i // (most - 1))
    return sorted(picks)


def count_launch(ir: KernelIR, args: dict[str, int | None], grid: tuple[int, int, int]) -> ProgramCounts:
    """What a launch of `ir` over `grid` does in all: the walk of a few programs, scaled to the grid. `args`
    gives the launch's integer arguments by parameter name (None: not an integer, or unknown); every other
    argument of the kernel is taken as a pointer named by its parameter."""
    fn = ir.functions[ir.entry]
    gx, gy, gz = (max(0, int(g)) for g in grid)
    programs = gx * gy * gz
    total = ProgramCounts()
    if programs == 0:
        return total
    picks = _samples(programs)
    for linear in picks:
        pid = (linear % gx, (linear // gx) % gy, linear // (gx * gy))
        walk = _Walk(ir, pid, (gx, gy, gz))
        for name in fn.args:
            value = args.get(name)
            walk.values["%" + name] = value
            walk.origins["%" + name] = frozenset() if value is not None else frozenset({name})
        one = ProgramCounts()
        walk.region(fn.body, one)
        total.add(one, programs / len(picks))
    return total
