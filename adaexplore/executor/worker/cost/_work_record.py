"""Recording what a forward does at full size (see `adaexplore.roofline`): each PyTorch operator it dispatches,
with PyTorch's own FLOP formulas and the bytes of its tensors, and each Triton launch the compile-only pass
compiles, read from the kernel's Triton IR with the launch's arguments.

The reference's record is made in the judge, which never imports a candidate. A candidate's is made in its own
worker during the full-size compile pass; the evaluator checks it against the launches the candidate's trials
made before it trusts it (`stages/result.py`).
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry

from adaexplore.roofline import (
    ForwardWork,
    LaunchConfig,
    LaunchWork,
    OpWork,
    TaskWork,
    b_tile_k_major,
    count_launch,
    parse_ttir,
)

__all__ = ["OpRecorder", "launch_config", "record_launch", "task_work"]

_ATTENTION = ("attention", "flash", "efficient")
# operators that move memory without FLOPs worth counting (pointwise operators are found by their tag)
_MEMORY = (
    "copy",
    "clone",
    "_to_copy",
    "contiguous",
    "fill",
    "zero",
    "zeros",
    "ones",
    "full",
    "sum",
    "mean",
    "amax",
    "amin",
    "max",
    "min",
    "argmax",
    "argmin",
    "var",
    "std",
    "norm",
    "linalg_vector_norm",
    "prod",
    "logsumexp",
    "_softmax",
    "_log_softmax",
    "softmax",
    "log_softmax",
    "native_batch_norm",
    "_native_batch_norm_legit",
    "_native_batch_norm_legit_no_training",
    "_native_batch_norm_legit_functional",
    "native_layer_norm",
    "native_group_norm",
    "_fused_rms_norm",
    "rms_norm",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "max_pool1d",
    "max_pool2d_with_indices",
    "max_pool3d_with_indices",
    "_adaptive_avg_pool2d",
    "_adaptive_avg_pool3d",
    "adaptive_max_pool2d",
    "adaptive_max_pool3d",
    "max_pool2d",
    "cumsum",
    "cumprod",
    "cummax",
    "cummin",
    "index",
    "index_select",
    "gather",
    "scatter",
    "scatter_add",
    "index_put",
    "index_add",
    "embedding",
    "cat",
    "stack",
    "constant_pad_nd",
    "reflection_pad2d",
    "replicate_pad2d",
    "native_dropout",
    "bernoulli",
    "rand",
    "randn",
    "uniform",
    "normal",
    "upsample_nearest2d",
    "upsample_bilinear2d",
    "tril",
    "triu",
    "flip",
    "roll",
    "repeat",
    "masked_fill",
    "where",
    "clamp",
    "any",
    "all",
    "sort",
    "topk",
    "nll_loss_forward",
    "nll_loss2d_forward",
    "mse_loss",
    "huber_loss",
    "smooth_l1_loss",
    "kl_div",
    "binary_cross_entropy",
    "l1_loss",
)
# allocations and views: no bytes move
_NO_TRAFFIC = (
    "empty",
    "empty_like",
    "empty_strided",
    "new_empty",
    "new_empty_strided",
    "lift_fresh",
    "detach",
    "alias",
)


def _tensors(values: Any) -> list[torch.Tensor]:
    found: list[torch.Tensor] = []
    if isinstance(values, torch.Tensor):
        found.append(values)
    elif isinstance(values, list | tuple):
        for value in values:
            found.extend(_tensors(value))
    elif isinstance(values, dict):
        for value in values.values():
            found.extend(_tensors(value))
    return found


def _nbytes(tensors: list[torch.Tensor]) -> float:
    seen: set[tuple[int, int, tuple[int, ...]]] = set()
    total = 0.0
    for t in tensors:
        key = (id(t), t.numel(), tuple(t.shape))
        if key in seen:
            continue
        seen.add(key)
        total += t.numel() * t.element_size()
    return total


def _category(func: Any) -> Literal["matmul", "conv", "attention", "memory", "view", "uncounted"]:
    packet = func.overloadpacket
    name = packet.__name__
    if packet in flop_registry:
        if "conv" in name:
            return "conv"
        if any(word in name for word in _ATTENTION):
            return "attention"
        return "matmul"
    if func.is_view or name in _NO_TRAFFIC:
        return "view"
    if torch.Tag.pointwise in func.tags or name.rstrip("_") in _MEMORY:
        return "memory"
    return "uncounted"


class OpRecorder(TorchDispatchMode):
    """Records every ATen operator dispatched inside it into `steps` (a shared list the launches go into too)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch wraps a mode's __torch_dispatch__ in torch._disable_dynamo unless told not to: its first call imports
        # torch._dynamo, about a second of CPU in every worker whose compile pass runs at the full sizes (no
        # torch.compile runs under this mode, which is what the wrapper is for)
        return False

    def __init__(self, steps: list[Any]) -> None:
        super().__init__()
        self.steps = steps

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        try:
            self.steps.append(_op_work(func, args, kwargs, out))
        except Exception:  # a formula that does not take these arguments: the op is counted by its bytes alone
            self.steps.append(OpWork(op=f"aten.{func.overloadpacket.__name__}", category="uncounted", bytes_read=0.0))
        return out


def _op_work(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> OpWork:
    category = _category(func)
    name = f"aten.{func.overloadpacket.__name__}"
    if category == "view":
        return OpWork(op=name, category="view")
    inputs = _tensors(args) + _tensors(kwargs)
    outputs = _tensors(out)
    floating = next((t for t in inputs if t.is_floating_point()), None)
    dtype = str(floating.dtype).removeprefix("torch.") if floating is not None else "float32"
    flops = 0.0
    if category in ("matmul", "conv", "attention"):
        flops = float(flop_registry[func.overloadpacket](*args, **kwargs, out_val=out))
    # an operator that writes into one of its inputs (add_, copy_) writes what it reads
    written = [t for t in outputs if not any(t is i for i in inputs)] or outputs
    return OpWork(
        op=name,
        category=category,
        flops=flops,
        dtype=dtype,
        bytes_read=_nbytes(inputs),
        bytes_written=_nbytes(written),
    )


def task_work(model: torch.nn.Module, inputs: list[Any]) -> TaskWork:
    """The reference's forward at full size, on shape-only tensors (call inside `_full_size.shape_only()`)."""
    steps: list[Any] = []
    complete, note = True, ""
    with torch.no_grad():
        try:
            with OpRecorder(steps):
                out = model(*inputs)
        except Exception as exc:
            complete, note = False, f"the reference's forward raised {type(exc).__name__} on shape-only tensors: {exc}"
            out = None
    params = list(model.parameters()) + list(model.buffers())
    return TaskWork(
        forward=ForwardWork(steps=steps, complete=complete, note=note[:300]),
        input_bytes=_nbytes(_tensors(inputs)),
        parameter_bytes=_nbytes(params),
        output_bytes=_nbytes(_tensors(out)),
    )


# ---- Triton launches ----------------------------------------------------------------------------------
def _tensor_of(value: Any) -> torch.Tensor | None:
    if isinstance(value, torch.Tensor):
        return value
    base = getattr(value, "base", None)  # a host-side tensor descriptor
    return base if isinstance(base, torch.Tensor) else None


def launch_config(
    jit: Any, bound: dict[str, Any], grid: tuple[int, int, int], kernel: Any, label: str, report: Any
) -> LaunchConfig:
    """One compiled launch of `jit` at full size: its IR walked with the launch's integer arguments (`bound`:
    the arguments by parameter name), and what the assembler reported (`report`: a `PtxasReport`)."""
    ints: dict[str, int | None] = {}
    sizes: dict[str, float] = {}
    for name, value in bound.items():
        if isinstance(value, int) and not isinstance(value, bool):
            ints[name] = value
        else:
            ints[name] = None
            tensor = _tensor_of(value)
            if tensor is not None:
                sizes[name] = float(tensor.numel() * tensor.element_size())
    counts = count_launch(parse_ttir(kernel.asm["ttir"]), ints, grid)

    def moved(asked: dict[str, float]) -> float:
        total = 0.0
        for name, nbytes in asked.items():
            cap = sizes.get(name)
            if cap is None:  # an address from no argument the walk could follow: at most all the tensors
                cap = sum(sizes.values()) or nbytes
            total += min(nbytes, cap)
        return total

    metadata = kernel.metadata
    ttgir = kernel.asm.get("ttgir", "")
    wgmma = not counts.dot_flops or not isinstance(ttgir, str) or "warp_group_dot" in ttgir
    return LaunchConfig(
        config=label,
        programs=grid[0] * grid[1] * grid[2],
        num_warps=int(metadata.num_warps),
        num_stages=int(metadata.num_stages),
        registers=report.registers,
        shared_memory=int(getattr(metadata, "shared", 0) or 0),
        spilled=bool(report.spill_stores or report.spill_loads),
        spill_bytes=int(report.spill_stores + report.spill_loads),
        serialized_mma=any(a.serializes for a in report.advisories),
        dot_flops=counts.dot_flops,
        dot_tile=counts.dot_tile,
        b_k_major=b_tile_k_major(ttgir, counts.dot_tile) if isinstance(ttgir, str) else None,
        simt=counts.simt,
        special=counts.special,
        bytes_read=moved(counts.loads),
        bytes_written=moved(counts.stores),
        requested_bytes=sum(counts.loads.values()) + sum(counts.stores.values()),
        wgmma=wgmma,
        exact=counts.exact,
        note="; ".join(counts.guesses),
    )


def record_launch(
    steps: list[Any],
    group: LaunchWork | None,
    jit: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    grid: Any,
    kernel: Any,
) -> None:
    """A launch the compile-only pass just compiled, into the record: into the autotuned kernel's `group` when
    one is open (each config is one), else as a step of its own."""
    from triton.runtime.driver import driver

    from adaexplore.executor.worker.cost._static_cost import config_label, ptxas_report

    binder = jit.device_caches[driver.active.get_current_device()][4]
    bound, _, _ = binder(*args, **kwargs)
    resolved = grid(bound) if callable(grid) else grid
    dims = tuple(int(g) for g in resolved)[:3]
    dims = dims + (1,) * (3 - len(dims))
    config = launch_config(
        jit, dict(bound), (dims[0], dims[1], dims[2]), kernel, config_label(jit, kwargs, kernel), ptxas_report(kernel)
    )
    if group is not None:
        group.configs.append(config)
    else:
        steps.append(LaunchWork(kernel=jit.__name__, configs=[config]))
