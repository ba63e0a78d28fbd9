"""Let code written for a CUDA device run on the CPU (the `compile` and `interpret` backends).

Candidates allocate with `device="cuda"`, call `.cuda()` and assert `x.is_cuda`. Here those all mean
the CPU, so the same source that runs on the GPU can be checked without one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

__all__ = ["cuda_on_cpu", "install_is_cuda"]


def _to_cpu_device(device: Any) -> Any:
    if isinstance(device, torch.device):
        return torch.device("cpu") if device.type == "cuda" else device
    if isinstance(device, str) and device.startswith("cuda"):
        return "cpu"
    if isinstance(device, int) and not isinstance(device, bool):
        return "cpu"
    return device


class _CudaToCpu(TorchFunctionMode):
    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = dict(kwargs or {})
        if func is torch.Tensor.cuda:
            return args[0]
        if "device" in kwargs:
            kwargs["device"] = _to_cpu_device(kwargs["device"])
        if func is torch.Tensor.to and len(args) > 1 and isinstance(args[1], str | torch.device | int):
            args = (args[0], _to_cpu_device(args[1]), *args[2:])
        return func(*args, **kwargs)


@contextlib.contextmanager
def cuda_on_cpu() -> Iterator[None]:
    """Inside, CUDA devices mean the CPU, `.cuda()` is a no-op and `torch.cuda.synchronize()` returns."""
    saved = torch.nn.Module.cuda, torch.cuda.synchronize
    torch.nn.Module.cuda = lambda self, device=None: self  # type: ignore[method-assign,assignment]
    torch.cuda.synchronize = lambda *args, **kwargs: None  # type: ignore[assignment]
    try:
        with _CudaToCpu():
            yield
    finally:
        torch.nn.Module.cuda, torch.cuda.synchronize = saved  # type: ignore[method-assign]


def install_is_cuda() -> None:
    """`x.is_cuda` answers True for CPU tensors, so `assert x.is_cuda` guards pass on the CPU."""
    torch.Tensor.is_cuda = property(lambda self: self.device.type in ("cpu", "cuda"))  # type: ignore[assignment,method-assign]
