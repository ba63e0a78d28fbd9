"""A stand-in Triton driver that compiles for a GPU target without a GPU.

With it active, every launch runs the real Triton compiler down to a cubin for the target (sm_90 by
default) and launches nothing, so a machine without a GPU reports the compile errors and resource
use that the GPU would. Outputs of the kernels are never written.
"""

from __future__ import annotations

import torch
from triton.backends.compiler import GPUTarget
from triton.backends.driver import DriverBase
from triton.runtime.driver import driver

__all__ = ["activate_compile_only", "parse_target"]


def parse_target(target: str) -> GPUTarget:
    """`"cuda:90"` -> GPUTarget("cuda", 90, 32)."""
    backend, _, arch = target.partition(":")
    if backend != "cuda" or not arch.isdigit():
        raise ValueError(f"compile target must look like 'cuda:90', not {target!r}")
    return GPUTarget("cuda", int(arch), 32)


class _CompileOnlyDriver(DriverBase):
    def __init__(self, target: GPUTarget) -> None:
        super().__init__()
        self._target = target

    @classmethod
    def is_active(cls) -> bool:
        return True

    def map_python_to_cpp_type(self, ty: str) -> str:
        from triton.backends.nvidia.driver import ty_to_cpp

        return ty_to_cpp(ty)

    def get_current_target(self) -> GPUTarget:
        return self._target

    def get_active_torch_device(self) -> torch.device:
        return torch.device("cpu")

    def get_benchmarker(self):  # type: ignore[no-untyped-def]
        # Autotuning compiles each config through the launches it benchmarks; the times are meaningless.
        def bench(fn, quantiles=None, **_):  # type: ignore[no-untyped-def]
            fn()
            return [1.0] * len(quantiles) if quantiles else 1.0

        return bench

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device: int) -> None:
        return None

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def get_device_interface(self):  # type: ignore[no-untyped-def]
        return torch.cuda


def activate_compile_only(target: str = "cuda:90") -> None:
    """Make the compile-only driver Triton's active driver. Launches must be forced to `warmup=True`."""
    driver.set_active(_CompileOnlyDriver(parse_target(target)))
