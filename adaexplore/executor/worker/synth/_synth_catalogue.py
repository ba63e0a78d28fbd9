"""Task synthesis: the catalogue of the operators a synthesized task may use.

Every `nn.Module` subclass in `torch.nn` and every routine in `torch.nn.functional` of the
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
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from adaexplore.executor.worker.synth._synth_checks import ATOL, INIT_SEED, RTOL, first_line, seed_cpu

__all__ = ["Catalogue", "Operator", "bind", "build_catalogue", "instantiate"]

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
            seed_cpu(INIT_SEED)
            first = instantiate(op, kwargs)
            seed_cpu(INIT_SEED)
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
        return f"raised {first_line(exc)}", "", False
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
