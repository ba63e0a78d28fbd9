"""Let code written for a CUDA device run on the CPU (the `compile` and `interpret` backends).

Candidates allocate with `device="cuda"`, call `.cuda()` and assert `x.is_cuda`. Here those all mean
the CPU, so the same source that runs on the GPU can be checked without one. They also ask torch.cuda about
the device (its multiprocessors, to size a persistent grid; its capability, to choose a Hopper path): here the
target GPU answers, from adaexplore's table of GPU models.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from adaexplore.roofline import GpuSpec

__all__ = ["TargetDeviceProperties", "cuda_on_cpu", "install_device_queries", "install_is_cuda"]


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
    torch.nn.Module.cuda = lambda self, device=None: self  # type: ignore[method-assign]  # patched on purpose
    torch.cuda.synchronize = lambda *args, **kwargs: None
    try:
        with _CudaToCpu():
            yield
    finally:
        torch.nn.Module.cuda, torch.cuda.synchronize = saved  # type: ignore[method-assign]  # restored


def install_is_cuda() -> None:
    """`x.is_cuda` answers True for CPU tensors, so `assert x.is_cuda` guards pass on the CPU."""
    torch.Tensor.is_cuda = property(lambda self: self.device.type in ("cpu", "cuda"))  # type: ignore[assignment]  # patched on purpose


# ---- torch.cuda's questions about the device, answered as the target GPU ------------------------------------
@dataclasses.dataclass(frozen=True)
class TargetDeviceProperties:
    """What `torch.cuda.get_device_properties` returns during CPU checks: the fields of torch's
    `_CudaDeviceProperties` that adaexplore's table of GPU models knows for the target GPU."""

    name: str
    major: int
    minor: int
    total_memory: int
    multi_processor_count: int
    L2_cache_size: int  # torch's name
    shared_memory_per_block: int
    shared_memory_per_block_optin: int
    shared_memory_per_multiprocessor: int
    regs_per_multiprocessor: int
    max_threads_per_multi_processor: int
    max_threads_per_block: int = 1024
    warp_size: int = 32
    is_integrated: int = 0
    is_multi_gpu_board: int = 0

    @classmethod
    def of(cls, gpu: GpuSpec) -> TargetDeviceProperties:
        return cls(
            name=gpu.cuda_name,
            major=gpu.capability[0],
            minor=gpu.capability[1],
            total_memory=gpu.memory_bytes,
            multi_processor_count=gpu.sms,
            L2_cache_size=gpu.l2_bytes,
            shared_memory_per_block=48 * 1024,  # without opting in, on every architecture since Volta
            shared_memory_per_block_optin=gpu.shared_memory_per_sm,
            # CUDA keeps 1 KiB of each multiprocessor's shared memory for itself
            shared_memory_per_multiprocessor=gpu.shared_memory_per_sm + 1024,
            regs_per_multiprocessor=gpu.registers_per_sm,
            max_threads_per_multi_processor=gpu.threads_per_sm,
        )

    def __repr__(self) -> str:
        # torch's own form
        return (
            f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
            f"total_memory={self.total_memory // 2**20}MB, multi_processor_count={self.multi_processor_count}, "
            f"L2_cache_size={self.L2_cache_size // 2**20}MB)"
        )


def _device_index(device: Any) -> int:
    """The index torch.cuda would take `device` for. A CPU device is the GPU here, and so is the meta device: the
    candidate's tensors are on the CPU (shape-only in the compile check at full sizes), and
    `torch.cuda.get_device_properties(x.device)` asks about the device they would be on."""
    if device is None:
        return 0
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type not in ("cuda", "cpu", "meta"):
            raise ValueError(f"Expected a cuda device, but got: {device}")
        return device.index or 0
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:{device}")


def install_device_queries(gpu: GpuSpec) -> None:
    """`torch.cuda.get_device_properties`, `get_device_capability`, `get_device_name`, `device_count` and
    `current_device` answer as one `gpu` (the target), where torch built without CUDA would raise. Each stands in
    for torch's own function: its module is torch.cuda's, so the policy's check of where a name leads sees it as
    the function it replaces."""
    properties = TargetDeviceProperties.of(gpu)

    def get_device_properties(device: Any = None) -> TargetDeviceProperties:
        index = _device_index(device)
        if index != 0:
            raise AssertionError("Invalid device id")
        return properties

    def get_device_capability(device: Any = None) -> tuple[int, int]:
        found = get_device_properties(device)
        return found.major, found.minor

    def get_device_name(device: Any = None) -> str:
        return get_device_properties(device).name

    def device_count() -> int:
        return 1

    def current_device() -> int:
        return 0

    for replacement in (get_device_properties, get_device_capability, get_device_name, device_count, current_device):
        original = getattr(torch.cuda, replacement.__name__)
        replacement.__module__ = original.__module__
        replacement.__qualname__ = original.__qualname__
        replacement.__doc__ = original.__doc__
        setattr(torch.cuda, replacement.__name__, replacement)
