"""Task synthesis: the shape families, the composition of a draft task from the catalogue, and its text.

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
"""

from __future__ import annotations

import dataclasses
import random
import re
import textwrap
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

from adaexplore.executor.worker.synth._synth_catalogue import Catalogue, Operator, bind, instantiate
from adaexplore.executor.worker.synth._synth_checks import INIT_SEED, seed_cpu

__all__ = ["FAMILIES", "Draft", "Family", "Step", "compose", "render"]


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
    seed_cpu(INIT_SEED)
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
