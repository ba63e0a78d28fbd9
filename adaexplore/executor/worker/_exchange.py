"""Tensors between processes as raw bytes in files, so that no process unpickles another's data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from adaexplore.executor._protocol import TensorFile

__all__ = ["read_tensor", "write_tensor"]

# Same-width integer views for dtypes numpy lacks.
_VIEW_AS = {
    torch.bfloat16: torch.int16,
    torch.float8_e4m3fn: torch.uint8,
    torch.float8_e5m2: torch.uint8,
    torch.bool: torch.uint8,
}


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
    """Read a tensor written by `write_tensor`, as a CPU tensor."""
    dtype = getattr(torch, meta.dtype)
    raw_dtype = _VIEW_AS.get(dtype, dtype)
    np_dtype = torch.empty(0, dtype=raw_dtype).numpy().dtype
    path = (directory / meta.path).resolve()
    if directory.resolve() not in path.parents:
        raise ValueError(f"tensor file {meta.path} is outside the exchange directory")
    count = int(np.prod(meta.shape)) if meta.shape else 1
    array = np.fromfile(path, dtype=np_dtype, count=count)
    if array.size != count:
        raise ValueError(f"tensor file {meta.path} holds {array.size} elements, expected {count}")
    tensor = torch.from_numpy(array).reshape(meta.shape)
    return tensor.view(dtype) if raw_dtype is not dtype else tensor
