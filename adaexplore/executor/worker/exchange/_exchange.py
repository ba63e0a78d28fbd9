"""Tensors between processes as raw bytes in files, so that no process unpickles another's data."""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

import numpy as np
import torch

from adaexplore.executor.wire._protocol import TensorFile

__all__ = ["exchangeable", "read_tensor", "write_tensor"]

# Same-width integer views for dtypes numpy lacks.
_VIEW_AS = {
    torch.bfloat16: torch.int16,
    torch.bool: torch.uint8,
    # every 8-bit float, written as its bits
    **{
        getattr(torch, name): torch.uint8
        for name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu")
        if hasattr(torch, name)
    },
}


@functools.cache
def exchangeable(dtype: torch.dtype) -> bool:
    """Whether tensors of `dtype` can be written for the judge (NumPy holds them, or their bits)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # complex32 says it is experimental on the way to failing
            torch.empty(0, dtype=_VIEW_AS.get(dtype, dtype)).numpy()
    except (TypeError, RuntimeError):
        return False
    return True


def write_tensor(tensor: torch.Tensor, directory: Path, name: str) -> TensorFile:
    """Write a contiguous host copy of `tensor` to `directory/name`."""
    host = tensor.detach().to("cpu").contiguous()
    view = host.view(_VIEW_AS[host.dtype]) if host.dtype in _VIEW_AS else host
    path = directory / name
    view.numpy().tofile(path)
    return TensorFile(
        path=name, shape=list(host.shape), dtype=str(host.dtype).removeprefix("torch."), device=str(tensor.device)
    )


def read_tensor(meta: TensorFile, directory: Path) -> torch.Tensor:
    """Read a tensor written by `write_tensor`, as a CPU tensor (of a sample: its values, flat)."""
    dtype = getattr(torch, meta.dtype)
    raw_dtype = _VIEW_AS.get(dtype, dtype)
    np_dtype = torch.empty(0, dtype=raw_dtype).numpy().dtype
    path = (directory / meta.path).resolve()
    if directory.resolve() not in path.parents:
        raise ValueError(f"tensor file {meta.path} is outside the exchange directory")
    count = meta.sampled or (int(np.prod(meta.shape)) if meta.shape else 1)
    array = np.fromfile(path, dtype=np_dtype, count=count)
    if array.size != count:
        raise ValueError(f"tensor file {meta.path} holds {array.size} elements, expected {count}")
    tensor = torch.from_numpy(array).reshape([count] if meta.sampled else meta.shape)
    return tensor.view(dtype) if raw_dtype is not dtype else tensor
