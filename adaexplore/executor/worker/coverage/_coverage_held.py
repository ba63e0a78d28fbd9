"""What the coverage check knows of a buffer (`Held`), and how PyTorch's operators are read: which make a buffer to
follow, which write without reading, which read only shapes or only some elements (see `_coverage`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from adaexplore.executor.worker.coverage._ir_walk_spans import merge, subtract

__all__ = [
    "EMPTY",
    "SELECTIVE",
    "SHAPE_ONLY",
    "WRITE_ONLY",
    "Held",
    "from_storage",
    "mapped",
    "named",
    "storage_key",
    "tensors_in",
    "writers",
]

EMPTY = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_permuted"}
# operators that write into their first argument without reading what it held
WRITE_ONLY = {
    "copy_",
    "fill_",
    "zero_",
    "uniform_",
    "normal_",
    "random_",
    "bernoulli_",
    "exponential_",
    "geometric_",
    "cauchy_",
    "log_normal_",
    "set_",
    "resize_",
    "resize_as_",
}
# operators that read an input's shape, never its values
SHAPE_ONLY = {
    "zeros_like",
    "ones_like",
    "full_like",
    "empty_like",
    "rand_like",
    "randn_like",
    "randint_like",
    "new_zeros",
    "new_ones",
    "new_full",
    "new_empty",
    "new_empty_strided",
    "_has_compatible_shallow_copy_type",
    "is_same_size",
    "sym_size",
    "sym_stride",
    "sym_numel",
    "sym_storage_offset",
}
# operators that may read only some elements of an input (by a mask, by indices): what they make is not held to the
# holes of their inputs
SELECTIVE = {
    "where",
    "masked_fill",
    "masked_fill_",
    "masked_scatter",
    "masked_select",
    "index",
    "index_select",
    "gather",
    "take",
    "embedding",
    "index_put",
    "index_put_",
    "scatter",
    "scatter_",
    "scatter_add",
    "scatter_add_",
    "scatter_reduce",
    "index_add",
    "index_add_",
    "index_copy",
    "index_copy_",
    "index_fill",
    "index_fill_",
    "tril",
    "triu",
    "tril_",
    "triu_",
    "nonzero",
    "slice_scatter",
    "select_scatter",
    "diagonal_scatter",
    "as_strided_scatter",
    "narrow_copy",
    "_unsafe_index",
    "_unsafe_index_put",
    "put_",
    "put",
}


@dataclass
class Held:
    """A buffer made by `torch.empty` and its kin, and what is known of it: the bytes written (sorted, disjoint;
    None: all of it), the launches that wrote into it, and how holes came into it from other buffers."""

    storage: Any  # kept alive, so that its identity is not reused by another buffer
    nbytes: int
    written: list[np.ndarray] = field(default_factory=list)
    everywhere: bool = False
    writers: list[str] = field(default_factory=list)
    derived: list[str] = field(default_factory=list)

    def merged(self) -> np.ndarray:
        if len(self.written) != 1:
            self.written = [merge(np.concatenate(self.written)) if self.written else np.zeros((0, 2), np.int64)]
        return self.written[0]

    def write(self, spans: np.ndarray | None) -> None:
        if spans is None:
            self.everywhere = True
        else:
            self.written.append(spans)

    def holes(self, spans: np.ndarray) -> np.ndarray:
        """The bytes of `spans` not written."""
        if self.everywhere:
            return np.zeros((0, 2), np.int64)
        return subtract(spans, self.merged())

    def unwrite(self, spans: np.ndarray) -> None:
        """`spans` now hold what came from elements never written."""
        before = np.array([[0, self.nbytes]], np.int64) if self.everywhere else self.merged()
        self.everywhere = False
        self.written = [subtract(before, spans)]


def storage_key(t: torch.Tensor) -> int:
    return int(t.untyped_storage()._cdata)


def tensors_in(values: Any) -> list[torch.Tensor]:
    if isinstance(values, torch.Tensor):
        return [values]
    if isinstance(values, list | tuple):
        return [t for v in values for t in tensors_in(v)]
    if isinstance(values, dict):
        return [t for v in values.values() for t in tensors_in(v)]
    return []


def writers(held: Held) -> str:
    return ", ".join(held.writers) if held.writers else "no kernel"


def named(jit: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[tuple[str, Any]]:
    names = list(getattr(jit, "arg_names", []))
    found = [(names[i], a) for i, a in enumerate(args) if i < len(names)]
    found += [(k, v) for k, v in kwargs.items()]
    return [(n, v if isinstance(v, torch.Tensor) else getattr(v, "base", None)) for n, v in found]


def from_storage(t: torch.Tensor, spans: np.ndarray) -> np.ndarray:
    """Ranges counted from where `t` points, counted from its storage's start."""
    return spans + t.storage_offset() * t.element_size()


def mapped(source: torch.Tensor, gap: np.ndarray, target: torch.Tensor) -> np.ndarray | None:
    """A hole of `source` where `target` holds the same elements in the same order (both contiguous, same
    shape): at the same places of `target`."""
    if source.shape != target.shape or not (source.is_contiguous() and target.is_contiguous()):
        return None
    scale = target.element_size() / source.element_size()
    shifted = (gap - int(source.storage_offset()) * source.element_size()) * scale
    mapped: np.ndarray = shifted.astype(np.int64) + int(target.storage_offset()) * target.element_size()
    return mapped
