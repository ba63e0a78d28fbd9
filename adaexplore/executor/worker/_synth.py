"""Task synthesis, the worker side: a worker of role `synth` (`python -m adaexplore.executor.worker --role synth`),
started and killed like every other worker of the evaluator; this process imports torch.

It answers one `Synthesize` request with one `Synthesized` reply (anything torch prints goes to stderr).
Requests:

    {"command": "synthesize", "count": N, "seed": S, "max_tries": T}  -> a SynthesisReport
    {"command": "check", "sources": ["..."], "narrow": [names] | null} -> {"checks": [TaskCheck, ...]}
    {"command": "catalogue"}                                          -> a Catalogue

A request it cannot read is answered with the reason in `Synthesized.error`. The caller side, its models and
its timeout are in `adaexplore.executor.probes._synth`.

**Catalogue.** Every `nn.Module` subclass in `torch.nn` and every routine in `torch.nn.functional` of the
installed torch is a candidate. Its parameters come from its signature (for builtins without one, from
the first line of the docstring). Required parameters are filled by name: channel-like names
(`num_features`, `num_channels`, `in_/out_features`, `in_/out_channels`, `normalized_shape`) get the
current feature size (square: a mid-chain Linear maps features to as many features), `num_groups` and
`groups` get 4 (every size here is a multiple of 4), `kernel_size` 3 (2 for pools), `padding` 1, `pad`
(1, 1, 1, 1), `output_size` 4, `size` 3, `norm_type` 2, `threshold` 0.1, `value` 0, the up/down-scale
factors 2; an optional `dim` is always given the feature axis (-1 for 2-D, 1 for 4-D). A candidate
with any other required parameter is out (losses, RNNs, attention, embeddings, convolutions in F need a
weight, ...). The rest is decided by a probe, per shape family (2-D `(batch, features)` and 4-D
`(N, C, H, W)` tensors with distinct sizes): the candidate is kept for a rank if, with warnings turned
into errors, it constructs and runs, returns a float32 tensor of the same rank that keeps the batch and
feature sizes (4-D: height and width may change), leaves its input unchanged, does not return its input
as is, draws nothing from the global random number generator in forward (Dropout, RReLU in train mode,
gumbel softmax), gives equal outputs for two forwards of one instance and for two instances built under
one seed (running state, randomness), gives finite outputs, and gives different outputs for different
inputs. Lazy modules are out by class (their shapes are fixed at the first call), in-place variants by
name (`relu_`). One operator is denied by name (`DENIED`, with the reason): `nn.SyncBatchNorm`, which a
CPU probe in one process cannot tell from BatchNorm.

**Families.** Three shape families, named after the example tasks in `examples/tasks` they come from:
`gemm_epilogue` (a `(batch_size, in_features)` input, `nn.Linear` first), `conv2d_activation` (an
`(N, C, H, W)` input, a same-padded `nn.Conv2d` first), `row_softmax` (a `(batch_size, dim)` input and
no operator with a weight matrix, as in the softmax and layernorm examples). GPU sizes are drawn per task
from KernelBench-like choices; small sizes are fixed per family (about 1e3 to 1e4 elements).

**Composition.** A seeded `random.Random` draws the family, the GPU sizes and a length of 3 to 6
operators (the anchor counts as one), then operators from the catalogue for the family's rank; each
draw is applied at small sizes (real CPU tensors) and at GPU sizes (on the meta device) and is kept only
if both keep the rank, the batch and the feature size. Modules are built in `Model.__init__`, and
`forward` calls them and the functions in order. The same operator sequence twice in one family is a
duplicate and is rejected.

**Checks** (`check_source`), in this order; the first failure is the rejection reason:
  (f) the source passes `adaexplore.executor.task_from_source` and has `SMALL_SIZES`;
  at small sizes, CPU, float32, one thread, init seed 0, inputs from seeds 1 and 2, warnings as errors:
  (-) nothing raises, the output is one floating-point tensor, the inputs are left unchanged;
  (a) deterministic: forward draws nothing from the global RNG, two forwards of one model are
      `torch.equal`, and so is a second model built under the same seed;
  (d) the output is finite;
  (c) magnitude against KernelBench's tolerance (atol = rtol = 1e-2): rms >= 0.1 (ten times atol), and
      at most 70% of the values are within atol of zero (ReLU gives about 50%);
  (b) depends on the input: between two random inputs the rms of the change is >= 5% of the output rms,
      and >= 10% of the elements change by more than the tolerance;
  (e) at GPU sizes on the meta device (nothing allocated): it runs, has the same output rank, and inputs
      and output hold at most 256 Mi elements each;
  (c, b, d again) "wide": GPU sizes except the narrow names (batch, height, width: kept small) -- a
      softmax or normalize over 4096 features is tiny there though fine at 300 -- if that costs at most
      64 Mi elements of inputs, parameters and output.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import json
import random
import re
import textwrap
import types
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from adaexplore.errors import TaskError
from adaexplore.executor.tasks._task import task_from_source
from adaexplore.executor.worker._channel import Channel

ATOL = RTOL = 1e-2
MIN_RMS = 0.1
NEAR_ZERO = ATOL
MAX_NEAR_ZERO_FRACTION = 0.7
MIN_RELATIVE_CHANGE = 0.05
MIN_CHANGED_FRACTION = 0.1
MAX_GPU_ELEMENTS = 256 * 2**20
MAX_WIDE_ELEMENTS = 64 * 2**20
DEFAULT_NARROW = ("batch_size", "batch", "height", "width", "depth", "rows", "seq_len", "length")

INIT_SEED, INPUT_SEED, OTHER_INPUT_SEED = 0, 1, 2
GROUPS = 4

_FEATURE_PARAMS = frozenset(
    {"num_features", "num_channels", "in_features", "in_channels", "out_features", "out_channels"}
)
_FIXED: dict[str, object] = {
    "num_groups": GROUPS,
    "groups": GROUPS,
    "padding": 1,
    "pad": (1, 1, 1, 1),
    "output_size": 4,
    "size": 3,
    "norm_type": 2.0,
    "threshold": 0.1,
    "value": 0.0,
    "upscale_factor": 2,
    "downscale_factor": 2,
}
_PROBE_SHAPES = {2: (6, 20), 4: (2, 12, 10, 9)}
# Operators the probe passes but that must not be used; the probe runs on one CPU process and cannot tell.
DENIED = {
    "nn.SyncBatchNorm": "a distributed-training BatchNorm: it needs a process group to do what its name says "
    "(outside one it is BatchNorm2d, which the catalogue has)",
}


def _seed(seed: int) -> None:
    """Seed the CPU generator (all this worker uses): `torch.manual_seed` also queues a seeding of every
    accelerator backend, with a captured stack each time, which costs a millisecond a call."""
    torch.default_generator.manual_seed(seed)


class BadRequest(Exception):
    """The request is not one this worker answers."""


# ---------------------------------------------------------------------------------------------------
# The catalogue


@dataclasses.dataclass(frozen=True)
class Operator:
    """One usable operator: `nn.GELU` (a module class) or `F.gelu` (a function)."""

    name: str
    kind: str  # "module" | "function"
    target: Any
    params: tuple[str, ...]  # the parameters we pass, by keyword, in signature order
    ranks: dict[int, str]  # rank -> "same" (shape kept) | "spatial" (4-D height/width change)
    weighted: bool  # has a parameter with two or more dimensions (a weight matrix or filter)

    @property
    def short(self) -> str:
        return self.name.split(".", 1)[1].lower()


@dataclasses.dataclass
class Catalogue:
    operators: dict[str, Operator]
    excluded: dict[str, str]

    def for_rank(self, rank: int, *, weighted: bool) -> list[Operator]:
        return [op for _, op in sorted(self.operators.items()) if rank in op.ranks and (weighted or not op.weighted)]


def _parameters(target: Any, kind: str) -> list[tuple[str, bool]] | None:
    """(name, required) for each named parameter; for a function the first (the input) is left out."""
    try:
        signature = inspect.signature(target)
        named = [p for p in signature.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        only_variadic = not named and bool(signature.parameters)
        params = [(p.name, p.default is p.empty) for p in named]
    except (TypeError, ValueError):
        only_variadic, params = True, []
    if kind == "module":
        return params
    if only_variadic:
        params = _docstring_parameters(target) or [("input", True)]
    return params[1:] if params else None


def _docstring_parameters(target: Any) -> list[tuple[str, bool]] | None:
    """A builtin's parameters from its docstring's first line, `name(input, kernel_size, stride=None)`."""
    lines = [line.strip() for line in (getattr(target, "__doc__", None) or "").splitlines() if line.strip()]
    if not lines:
        return None
    match = re.match(r"^\w+\((.*)\)", lines[0])
    if match is None:
        return None
    try:
        fn = ast.parse(f"def _f({match.group(1)}): pass").body[0]
    except SyntaxError:
        return None
    assert isinstance(fn, ast.FunctionDef)
    args = fn.args.posonlyargs + fn.args.args
    first_default = len(args) - len(fn.args.defaults)
    params = [(a.arg, i < first_default) for i, a in enumerate(args)]
    params += [(a.arg, d is None) for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True)]
    return params


def _chosen_params(name: str, kind: str, params: list[tuple[str, bool]]) -> tuple[tuple[str, ...], str | None]:
    chosen = []
    for param, required in params:
        if param == "dim":
            chosen.append(param)
        elif required:
            if param in _FEATURE_PARAMS or param in _FIXED or param in ("normalized_shape", "kernel_size"):
                chosen.append(param)
            else:
                return (), f"needs an argument {param!r} that cannot be inferred from the input"
    return tuple(chosen), None


def _argument(op: Operator, param: str, rank: int, feature: int, feature_code: str, shape: tuple[int, ...]):
    """(value, source text) for one parameter of `op` applied to a tensor of `shape`."""
    axis = -1 if rank == 2 else 1
    if param in _FEATURE_PARAMS:
        return (feature, feature_code) if op.kind == "module" else (shape[axis], f"x.shape[{axis}]")
    if param == "normalized_shape":
        return (feature, feature_code) if op.kind == "module" else (tuple(shape[-1:]), "x.shape[-1:]")
    if param == "dim":
        return axis, str(axis)
    if param == "kernel_size":
        size = 2 if "pool" in op.name.lower() else 3
        return size, str(size)
    value = _FIXED[param]
    return value, repr(value)


def bind(op: Operator, rank: int, feature: int, feature_code: str, shape: tuple[int, ...]):
    """The keyword arguments for `op` and their source text, `["num_groups=4", ...]`."""
    kwargs, code = {}, []
    for param in op.params:
        value, text = _argument(op, param, rank, feature, feature_code, shape)
        kwargs[param] = value
        code.append(f"{param}={text}")
    return kwargs, code


def instantiate(op: Operator, kwargs: dict[str, Any]) -> Callable[[torch.Tensor], torch.Tensor]:
    if op.kind == "module":
        return op.target(**kwargs)
    return functools.partial(op.target, **kwargs)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200] if text else ''}".rstrip(": ")


def _probe(op: Operator, rank: int) -> tuple[str | None, str, bool]:
    """(reason it is unusable or None, "same"/"spatial", has a weight matrix) for `op` at `rank`."""
    shape = _PROBE_SHAPES[rank]
    axis = -1 if rank == 2 else 1
    gen = torch.Generator().manual_seed(1234)
    x = torch.randn(shape, generator=gen)
    other = torch.randn(shape, generator=gen)
    feature = shape[axis]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            kwargs, _ = bind(op, rank, feature, str(feature), shape)
            _seed(INIT_SEED)
            first = instantiate(op, kwargs)
            _seed(INIT_SEED)
            second = instantiate(op, kwargs)
            given = x.clone()
            state = torch.get_rng_state()
            out = first(given)
            drew = not torch.equal(state, torch.get_rng_state())
            if not isinstance(out, torch.Tensor) or out.dtype != torch.float32:
                return "does not return a float32 tensor", "", False
            if drew:
                return "not deterministic (forward draws from the global random number generator)", "", False
            if not torch.equal(given, x):
                return "modifies its input in place", "", False
            if out.dim() != rank or out.shape[0] != shape[0] or out.shape[axis] != feature or out.numel() == 0:
                return f"changes the rank, batch or feature size ({tuple(shape)} -> {tuple(out.shape)})", "", False
            if out.shape == x.shape and torch.equal(out, x):
                return "returns its input unchanged", "", False
            if not (torch.equal(out, first(x.clone())) and torch.equal(out, second(x.clone()))):
                return "not deterministic (running state or randomness)", "", False
            if not torch.isfinite(out).all():
                return "output is not finite", "", False
            if torch.allclose(out, first(other.clone()), atol=ATOL, rtol=RTOL):
                return "output does not depend on the input", "", False
    except Exception as exc:
        return f"raised {_first_line(exc)}", "", False
    weighted = isinstance(first, nn.Module) and any(p.dim() >= 2 for p in first.parameters())
    return None, "same" if out.shape == x.shape else "spatial", weighted


def _candidates() -> Iterator[tuple[str, str, Any]]:
    for attr in dir(nn):
        obj = getattr(nn, attr)
        if inspect.isclass(obj) and issubclass(obj, nn.Module) and not attr.startswith("_"):
            yield f"nn.{attr}", "module", obj
    for attr in dir(F):
        obj = getattr(F, attr)
        if attr.startswith("_") or not inspect.isroutine(obj) or inspect.isclass(obj):
            continue
        if not (getattr(obj, "__module__", None) or "torch").startswith("torch"):
            continue  # typing helpers imported into the namespace
        yield f"F.{attr}", "function", obj


@functools.cache
def build_catalogue() -> Catalogue:
    operators: dict[str, Operator] = {}
    excluded: dict[str, str] = {}
    for name, kind, target in _candidates():
        if kind == "module" and issubclass(target, nn.modules.lazy.LazyModuleMixin):
            excluded[name] = "lazy module (its shapes are fixed at its first call)"
            continue
        if name in DENIED:
            excluded[name] = DENIED[name]
            continue
        if kind == "function" and name.endswith("_"):
            excluded[name] = "in-place variant"
            continue
        params = _parameters(target, kind)
        if params is None:
            excluded[name] = "has no parameter for the input"
            continue
        chosen, why = _chosen_params(name, kind, params)
        if why is not None:
            excluded[name] = why
            continue
        op = Operator(name, kind, target, chosen, {}, False)
        ranks: dict[int, str] = {}
        reasons: dict[int, str] = {}
        weighted = False
        for rank in sorted(_PROBE_SHAPES):
            reason, shape_kind, has_weight = _probe(op, rank)
            if reason is None:
                ranks[rank] = shape_kind
                weighted = weighted or has_weight
            else:
                reasons[rank] = reason
        if ranks:
            operators[name] = dataclasses.replace(op, ranks=ranks, weighted=weighted)
        elif len(set(reasons.values())) == 1:
            excluded[name] = next(iter(reasons.values()))
        else:
            excluded[name] = "; ".join(f"{rank}-D: {reason}" for rank, reason in sorted(reasons.items()))
    return Catalogue(operators, excluded)


# ---------------------------------------------------------------------------------------------------
# Families and composition


@dataclasses.dataclass(frozen=True)
class Family:
    """A shape family taken from one example task."""

    name: str
    summary: str
    rank: int
    input_names: tuple[str, ...]
    gpu_choices: tuple[tuple[tuple[str, ...], tuple[int, ...]], ...]  # names sharing one draw, choices
    small: dict[str, int]
    narrow: tuple[str, ...]
    feature: str
    init_params: tuple[str, ...]
    constants: dict[str, int]
    anchor: str | None  # operator name
    anchor_attr: str
    anchor_code: str
    weighted: bool  # may draw operators with a weight matrix


FAMILIES: tuple[Family, ...] = (
    Family(
        name="gemm_epilogue",
        summary="a linear layer on a (batch_size, in_features) input, then an epilogue",
        rank=2,
        input_names=("batch_size", "in_features"),
        gpu_choices=(
            (("batch_size",), (128, 256, 512, 1024)),
            (("in_features",), (1024, 2048, 4096)),
            (("out_features",), (1024, 2048, 4096)),
        ),
        small={"batch_size": 12, "in_features": 50, "out_features": 96},
        narrow=("batch_size",),
        feature="out_features",
        init_params=("in_features", "out_features"),
        constants={},
        anchor="nn.Linear",
        anchor_attr="linear",
        anchor_code="nn.Linear(in_features, out_features)",
        weighted=True,
    ),
    Family(
        name="conv2d_activation",
        summary="a same-padded 2-D convolution on an (N, C, H, W) input, then more layers",
        rank=4,
        input_names=("batch_size", "in_channels", "height", "width"),
        gpu_choices=(
            (("batch_size",), (16, 32, 64)),
            (("in_channels",), (3, 16, 32)),
            (("out_channels",), (32, 64, 128)),
            (("height", "width"), (32, 64)),
        ),
        small={"batch_size": 2, "in_channels": 3, "out_channels": 12, "height": 14, "width": 18},
        narrow=("batch_size", "height", "width"),
        feature="out_channels",
        init_params=("in_channels", "out_channels", "kernel_size"),
        constants={"kernel_size": 3},
        anchor="nn.Conv2d",
        anchor_attr="conv",
        anchor_code="nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)",
        weighted=True,
    ),
    Family(
        name="row_softmax",
        summary="row-wise operators on a (batch_size, dim) input, with no weight matrix",
        rank=2,
        input_names=("batch_size", "dim"),
        gpu_choices=((("batch_size",), (2048, 4096, 8192)), (("dim",), (1024, 2048, 4096))),
        small={"batch_size": 9, "dim": 300},
        narrow=("batch_size",),
        feature="dim",
        init_params=(),
        constants={},
        anchor=None,
        anchor_attr="",
        anchor_code="",
        weighted=False,
    ),
)


@dataclasses.dataclass(frozen=True)
class Step:
    op: str  # operator name, e.g. "nn.LayerNorm"
    kind: str
    attr: str  # the module attribute, for modules
    call: str  # "nn.LayerNorm(normalized_shape=out_features)" or "F.gelu(x)"
    constant_params: tuple[tuple[str, float], ...] = ()  # parameters initialized to one constant


@dataclasses.dataclass
class Draft:
    family: Family
    sizes: dict[str, int]
    steps: list[Step]

    @property
    def operators(self) -> list[str]:
        return [step.op for step in self.steps]


@contextmanager
def _quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def _apply(op: Operator, family: Family, x: torch.Tensor, feature: int) -> tuple[torch.Tensor, list[str], Any]:
    kwargs, code = bind(op, family.rank, feature, family.feature, tuple(x.shape))
    with _quiet():
        fn = instantiate(op, kwargs)
        return fn(x), code, fn


def _constant_params(module: Any) -> tuple[tuple[str, float], ...]:
    """Parameters a module initializes to one value (norm weights and biases, PReLU's slope)."""
    if not isinstance(module, nn.Module):
        return ()
    found = []
    for name, param in module.named_parameters():
        flat = param.detach().flatten()
        if "." not in name and flat.numel() > 0 and bool((flat == flat[0]).all()):
            found.append((name, float(flat[0])))
    return tuple(found)


def compose(family: Family, catalogue: Catalogue, rng: random.Random) -> tuple[Draft | None, list[str], str]:
    """A draft task of the family, or None with the operators so far and why it stopped."""
    sizes: dict[str, int] = {}
    for names, choices in family.gpu_choices:
        value = rng.choice(choices)
        for size_name in names:
            sizes[size_name] = value
    sizes.update(family.constants)
    length = rng.randint(3, 6)
    axis = -1 if family.rank == 2 else 1
    small_env = {**sizes, **family.small}
    _seed(INIT_SEED)
    xs = torch.randn([small_env[n] for n in family.input_names])
    with torch.device("meta"):
        xg = torch.empty([sizes[n] for n in family.input_names])
    steps: list[Step] = []
    used: dict[str, int] = {}

    def attr_for(short: str) -> str:
        used[short] = used.get(short, 0) + 1
        return short if used[short] == 1 else f"{short}_{used[short]}"

    if family.anchor is not None:
        if family.anchor not in catalogue.operators:
            return None, [family.anchor], f"the anchor {family.anchor} is not usable in this torch"
        env = {**family.constants}
        with torch.no_grad():
            small_anchor = eval(family.anchor_code, {"nn": nn}, {**env, **small_env})
            xs = small_anchor(xs)
            with torch.device("meta"):
                xg = eval(family.anchor_code, {"nn": nn}, dict(sizes))(xg)
        steps.append(Step(family.anchor, "module", attr_for(family.anchor_attr), family.anchor_code))
    pool = catalogue.for_rank(family.rank, weighted=family.weighted)
    while len(steps) < length:
        for _attempt in range(12):
            op = rng.choice(pool)
            try:
                with torch.no_grad():
                    ys, code, small_fn = _apply(op, family, xs, small_env[family.feature])
                    with torch.device("meta"):
                        yg, gpu_code, _ = _apply(op, family, xg, sizes[family.feature])
            except Exception:
                continue
            if code != gpu_code or not all(
                y.dim() == family.rank and y.shape[0] == x.shape[0] and y.shape[axis] == x.shape[axis]
                for x, y in ((xs, ys), (xg, yg))
            ):
                continue
            xs, xg = ys, yg
            if op.kind == "module":
                call = f"{op.name}({', '.join(code)})"
                steps.append(Step(op.name, "module", attr_for(op.short), call, _constant_params(small_fn)))
            else:
                steps.append(Step(op.name, "function", "", f"{op.name}({', '.join(['x', *code])})"))
            break
        else:
            return None, [s.op for s in steps], f"no operator accepted the shape {tuple(xs.shape)}"
    return Draft(family, sizes, steps), [s.op for s in steps], ""


def _phrase(names: list[str]) -> str:
    if len(names) == 1:
        return names[0]
    return f"{names[0]}, then {', '.join(names[1:-1])}{' and ' if len(names) > 2 else ''}{names[-1]}"


def render(draft: Draft) -> str:
    """The task module's text, in the format of examples/tasks."""
    family, steps = draft.family, draft.steps
    uses_feature = any(step.kind == "module" and re.search(rf"\b{family.feature}\b", step.call) for step in steps)
    init_params = list(family.init_params)
    if uses_feature and family.feature not in init_params:
        init_params.append(family.feature)
    uses_functional = any(step.kind == "function" for step in steps)
    lines = [
        *textwrap.wrap(f'"""Synthetic task: {_phrase(draft.operators)}, applied in order.', 100),
        "",
        *textwrap.wrap(f"Shape family of the example task {family.name}: {family.summary}.", 100),
        '"""',
        "",
        "import torch",
        "import torch.nn as nn",
    ]
    if uses_functional:
        lines.append("import torch.nn.functional as F")
    signature = "".join(f", {p}: int" for p in init_params)
    lines += ["", "", "class Model(nn.Module):", f"    def __init__(self{signature}):", "        super().__init__()"]
    lines += [f"        self.{s.attr} = {s.call}" for s in steps if s.kind == "module"]
    perturbed = [(s.attr, name, value) for s in steps for name, value in s.constant_params]
    if perturbed:
        lines += [
            "        # Parameters away from their constant defaults, so that ignoring them shows.",
            "        with torch.no_grad():",
        ]
        lines += [f"            self.{attr}.{name}.normal_({value!r}, 0.1)" for attr, name, value in perturbed]
    lines += ["", "    def forward(self, x: torch.Tensor) -> torch.Tensor:"]
    for i, step in enumerate(steps):
        expr = f"self.{step.attr}(x)" if step.kind == "module" else step.call
        lines.append(f"        return {expr}" if i == len(steps) - 1 else f"        x = {expr}")
    gpu_names = [n for names, _ in family.gpu_choices for n in names]
    lines += ["", "", "# Sizes for the GPU."]
    lines += [f"{n} = {draft.sizes[n]}" for n in gpu_names]
    lines += [f"{n} = {v}" for n, v in family.constants.items()]
    small = ", ".join(f'"{n}": {family.small[n]}' for n in gpu_names)
    lines += ["", "# Small sizes for CPU checks in the Triton interpreter.", f"SMALL_SIZES = {{{small}}}"]
    shape = ", ".join(family.input_names)
    lines += ["", "", "def get_inputs():", f"    return [torch.randn({shape})]", "", ""]
    lines += ["def get_init_inputs():", f"    return [{', '.join(init_params)}]", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------
# Checks


class Reject(Exception):
    """A check failed; the message is the reason."""


def _module(source: str, sizes: dict[str, int | float] | None) -> types.ModuleType:
    module = types.ModuleType("adaexplore_synth_task")
    exec(compile(source, "<synthesized task>", "exec"), module.__dict__)
    for name, value in (sizes or {}).items():
        if name not in module.__dict__:
            raise Reject(f"SMALL_SIZES names {name!r}, which the task module does not define")
        module.__dict__[name] = value
    return module


def _inputs(module: types.ModuleType, seed: int) -> list[Any]:
    _seed(seed)
    return list(module.get_inputs())


def _model(module: types.ModuleType) -> Any:
    _seed(INIT_SEED)
    init = list(module.get_init_inputs())
    _seed(INIT_SEED)
    return module.Model(*init)


def _clone(values: list[Any]) -> list[Any]:
    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]


def _same(a: list[Any], b: list[Any]) -> bool:
    return all(torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y for x, y in zip(a, b, strict=True))


def _output(out: Any) -> torch.Tensor:
    if not isinstance(out, torch.Tensor) or not out.is_floating_point():
        raise Reject("output is not a single floating-point tensor")
    return out


def _magnitude(out: torch.Tensor, where: str) -> dict[str, float]:
    y = out.detach().double()
    if not torch.isfinite(y).all():
        raise Reject(f"output is not finite{where}")
    rms = float(y.square().mean().sqrt())
    near_zero = float((y.abs() < NEAR_ZERO).double().mean())
    if rms < MIN_RMS:
        raise Reject(f"output too small (rms {rms:.1e}{where}; needs at least {MIN_RMS:g})")
    if near_zero > MAX_NEAR_ZERO_FRACTION:
        raise Reject(
            f"output mostly near zero ({near_zero:.0%} of values within {NEAR_ZERO:g} of zero{where}; "
            f"at most {MAX_NEAR_ZERO_FRACTION:.0%})"
        )
    return {"rms": rms, "near_zero_fraction": near_zero}


def _dependence(a: torch.Tensor, b: torch.Tensor, where: str) -> float:
    a, b = a.detach().double(), b.detach().double()
    if not torch.isfinite(b).all():
        raise Reject(f"output is not finite{where}")
    scale = max(float(a.square().mean().sqrt()), float(b.square().mean().sqrt()))
    change = float((a - b).square().mean().sqrt()) / scale if scale > 0 else 0.0
    changed = float(((a - b).abs() > ATOL + RTOL * b.abs()).double().mean())
    if change < MIN_RELATIVE_CHANGE or changed < MIN_CHANGED_FRACTION:
        raise Reject(
            f"output does not depend on the input (between two random inputs the output changes by "
            f"{change:.1e} relative rms and {changed:.0%} of elements move beyond the tolerance{where}; "
            f"needs {MIN_RELATIVE_CHANGE:g} and {MIN_CHANGED_FRACTION:.0%})"
        )
    return change


def _numel(values: Any) -> int:
    if isinstance(values, torch.Tensor):
        return values.numel()
    if isinstance(values, list | tuple):
        return sum(_numel(v) for v in values)
    return 0


def check_source(source: str, narrow: list[str] | None = None, name: str = "task") -> dict[str, Any]:
    """The verdict on a task source: {"ok", "reason", and what was measured}."""
    stats: dict[str, Any] = {}
    try:
        _check(source, list(DEFAULT_NARROW) if narrow is None else narrow, name, stats)
    except Reject as exc:
        return {"ok": False, "reason": str(exc), **stats}
    return {"ok": True, "reason": None, **stats}


@contextmanager
def _phase(where: str) -> Iterator[None]:
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("error")
            yield
    except Reject:
        raise
    except Exception as exc:
        raise Reject(f"raised {_first_line(exc)}{where}") from exc


def _check(source: str, narrow: list[str], name: str, stats: dict[str, Any]) -> None:
    try:
        task = task_from_source(source, name)
    except TaskError as exc:
        raise Reject(f"does not load as a task: {exc}") from exc
    if not task.small_sizes:
        raise Reject("has no SMALL_SIZES for CPU checks")
    with _phase(""):
        module = _module(source, task.small_sizes)
        inputs = _inputs(module, INPUT_SEED)
        others = _inputs(module, OTHER_INPUT_SEED)
        first, second = _model(module), _model(module)
        given = _clone(inputs)
        state = torch.get_rng_state()
        out = _output(first(*given))
        drew = not torch.equal(state, torch.get_rng_state())
        if not _same(given, inputs):
            raise Reject("modifies its input in place")
        stats["output_shape"] = list(out.shape)
        if drew:
            raise Reject("not deterministic (forward draws from the global random number generator)")
        if not torch.equal(out, _output(first(*_clone(inputs)))):
            raise Reject("not deterministic (two forward calls of one model differ)")
        if not torch.equal(out, _output(second(*_clone(inputs)))):
            raise Reject("not deterministic (two models built under one seed differ)")
        stats.update(_magnitude(out, ""))
        stats["relative_change"] = _dependence(out, _output(first(*others)), "")
    with _phase(" (at GPU sizes, on the meta device)"), torch.device("meta"):
        module = _module(source, None)
        gpu_inputs = _inputs(module, INPUT_SEED)
        gpu_model = _model(module)
        gpu_out = _output(gpu_model(*gpu_inputs))
        stats["gpu_output_shape"] = list(gpu_out.shape)
        if gpu_out.dim() != out.dim():
            raise Reject(f"output rank differs at GPU sizes ({gpu_out.dim()}, {out.dim()} at small sizes)")
        biggest = max([gpu_out.numel(), *(_numel(v) for v in gpu_inputs)])
        if biggest > MAX_GPU_ELEMENTS:
            raise Reject(f"too large at GPU sizes ({biggest} elements in one tensor; at most {MAX_GPU_ELEMENTS})")
    wide = {n: v for n, v in task.small_sizes.items() if n in narrow}
    with _phase(" (at GPU widths, on the meta device)"), torch.device("meta"):
        module = _module(source, wide)
        meta_inputs = _inputs(module, INPUT_SEED)
        meta_model = _model(module)
        cost = _numel(meta_inputs) + _numel(meta_model(*meta_inputs))
        cost += sum(p.numel() for p in meta_model.parameters()) if isinstance(meta_model, nn.Module) else 0
    if cost > MAX_WIDE_ELEMENTS:
        return
    where = " at GPU widths"
    with _phase(" (at GPU widths)"):
        module = _module(source, wide)
        model = _model(module)
        wide_out = _output(model(*_inputs(module, INPUT_SEED)))
        wide_stats = _magnitude(wide_out, where)
        stats["wide_rms"] = wide_stats["rms"]
        _dependence(wide_out, _output(model(*_inputs(module, OTHER_INPUT_SEED))), where)


# ---------------------------------------------------------------------------------------------------
# Synthesis


def synthesize(count: int, seed: int, max_tries: int) -> dict[str, Any]:
    catalogue = build_catalogue()
    families = [f for f in FAMILIES if f.anchor is None or f.anchor in catalogue.operators]
    rng = random.Random(seed)
    tasks: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
    seen: dict[tuple[str, ...], str] = {}
    tries = 0
    while len(tasks) < count and tries < max_tries and families:
        tries += 1
        family = rng.choice(families)
        draft, operators, why = compose(family, catalogue, rng)
        if draft is None:
            rejected.append({"operators": operators, "reason": why})
            continue
        key = (family.name, *operators)
        if key in seen:
            rejected.append({"operators": operators, "reason": f"duplicate of an earlier draft ({seen[key]})"})
            continue
        name = f"syn_{len(tasks):04d}_{'_'.join(op.split('.', 1)[1].lower() for op in operators)}"[:96]
        seen[key] = name
        source = render(draft)
        verdict = check_source(source, list(family.narrow), name)
        if not verdict["ok"]:
            rejected.append({"operators": operators, "reason": verdict["reason"]})
            continue
        tasks.append({"name": name, "source": source, "operators": operators, "seed_task": family.name})
    return {
        "tasks": tasks,
        "rejected": rejected,
        "catalogue_size": len(catalogue.operators),
        "torch_version": torch.__version__,
    }


def catalogue_reply() -> dict[str, Any]:
    catalogue = build_catalogue()
    return {
        "torch_version": torch.__version__,
        "operators": [
            {"name": op.name, "ranks": sorted(op.ranks), "changes_shape": "spatial" in op.ranks.values()}
            for _, op in sorted(catalogue.operators.items())
        ],
        "anchors": {f.name: f.anchor for f in FAMILIES if f.anchor is not None},
        "excluded": dict(sorted(catalogue.excluded.items())),
    }


def _integer(request: dict[str, Any], key: str, minimum: int) -> int:
    value = request.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise BadRequest(f"{key!r} must be an integer of at least {minimum}, not {value!r}")
    return value


def answer(request: Any) -> dict[str, Any]:
    if not isinstance(request, dict):
        raise BadRequest("the request must be a JSON object")
    command = request.get("command")
    if command == "synthesize":
        count = _integer(request, "count", 0)
        return synthesize(count, _integer(request, "seed", -(2**63)), _integer(request, "max_tries", 0))
    if command == "check":
        sources, narrow = request.get("sources"), request.get("narrow")
        if not (isinstance(sources, list) and all(isinstance(source, str) for source in sources)):
            raise BadRequest("'sources' must be a list of task module texts")
        if narrow is not None and not (isinstance(narrow, list) and all(isinstance(n, str) for n in narrow)):
            raise BadRequest("'narrow' must be a list of size names or null")
        return {"checks": [check_source(source, narrow, f"task_{i}") for i, source in enumerate(sources)]}
    if command == "catalogue":
        return catalogue_reply()
    raise BadRequest(f"unknown command {command!r}; expected 'synthesize', 'check' or 'catalogue'")


def serve(channel: Channel) -> None:
    """Answer the one request the evaluator sends, then return (the process ends)."""
    from adaexplore.executor.wire._protocol import Synthesize, Synthesized

    torch.set_num_threads(1)
    command = channel.receive()
    if not isinstance(command, Synthesize):
        return
    try:
        reply = answer(command.request)
    except BadRequest as exc:
        channel.send(Synthesized(error=str(exc)))
        return
    # the reply crosses as JSON: a non-finite number in it is our bug, not something to send as NaN
    json.dumps(reply, allow_nan=False)
    channel.send(Synthesized(reply=reply))
