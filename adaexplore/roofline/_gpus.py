"""What each GPU model can do at most: the peaks a speed of light and a performance estimate are computed from.

Figures are the vendors' datasheet peaks for dense math (no 2:4 sparsity), in the SXM form where there is one:
HBM bandwidth in GB/s (10^9 bytes), FLOP rates in TFLOP/s, with the streaming multiprocessors' count and what one
of them holds (shared memory, registers, threads), which bound how many programs of a kernel run at once; and what
CUDA says of such a GPU (its name, compute capability and memory), which the CPU backends answer a candidate's
`torch.cuda.get_device_properties` with.
`launch_us` is the time one kernel launch costs the GPU when launches come back to back (measured on an H200 with
`benchmarks/calibrate_estimate.py`; the same figure stands for the others).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from adaexplore.errors import ConfigError

__all__ = ["DEFAULT_TARGET", "GPUS", "GpuSpec", "gpu_for_device", "gpu_spec", "known_gpus"]


@dataclass(frozen=True)
class GpuSpec:
    name: str
    # what `torch.cuda.get_device_name` says of such a GPU contains one of these
    matches: tuple[str, ...]
    sms: int
    hbm_gbps: float
    l2_bytes: int
    fp32_tflops: float  # the CUDA cores' fused multiply-add
    tf32_tflops: float  # the tensor cores
    fp16_tflops: float
    bf16_tflops: float
    fp8_tflops: float | None
    fp64_tflops: float  # the tensor cores' fp64 where they have it
    int8_tops: float | None
    shared_memory_per_sm: int  # bytes, what a block may use at most on this architecture
    # what `torch.cuda.get_device_name` says of one, its compute capability, and its memory in bytes as nvidia-smi
    # reports it (memory.total; CUDA's `total_memory` leaves out up to about 1 % that the driver keeps)
    cuda_name: str
    capability: tuple[int, int]
    memory_bytes: int
    registers_per_sm: int = 65536
    threads_per_sm: int = 2048
    blocks_per_sm: int = 32
    launch_us: float = 2.5

    def peak_tflops(self, precision: str) -> float | None:
        """The peak for a precision: fp32 (CUDA cores), tf32, fp16, bf16, fp8, int8, fp64."""
        return {
            "fp32": self.fp32_tflops,
            "tf32": self.tf32_tflops,
            "fp16": self.fp16_tflops,
            "bf16": self.bf16_tflops,
            "fp8": self.fp8_tflops,
            "int8": self.int8_tops,
            "fp64": self.fp64_tflops,
        }.get(precision)


# the GPU that estimates and the CPU backends' device queries are for where no GPU is here and none is named
DEFAULT_TARGET = "H200"


class _Architecture(TypedDict):
    """What one architecture's GPUs share, spread into each of their specs."""

    shared_memory_per_sm: int
    capability: tuple[int, int]


_HOPPER: _Architecture = {"shared_memory_per_sm": 232448, "capability": (9, 0)}
_MIB = 1 << 20
GPUS: dict[str, GpuSpec] = {
    spec.name: spec
    for spec in (
        GpuSpec(
            "H200",
            ("H200",),
            132,
            4800,
            60 << 20,  # as an H200 reports it (an H100 SXM enables 50 MB of the same chip's L2)
            66.9,
            494.7,
            989.4,
            989.4,
            1978.9,
            66.9,
            1978.9,
            cuda_name="NVIDIA H200",
            memory_bytes=143771 * _MIB,
            **_HOPPER,
        ),
        GpuSpec(
            "H100",
            ("H100 80GB HBM3", "H100 SXM", "H100"),
            132,
            3350,
            50 << 20,
            66.9,
            494.7,
            989.4,
            989.4,
            1978.9,
            66.9,
            1978.9,
            cuda_name="NVIDIA H100 80GB HBM3",
            memory_bytes=81559 * _MIB,
            **_HOPPER,
        ),
        GpuSpec(
            "H100 PCIe",
            ("H100 PCIe",),
            114,
            2000,
            50 << 20,
            51.2,
            378,
            756,
            756,
            1513,
            51.2,
            1513,
            cuda_name="NVIDIA H100 PCIe",
            memory_bytes=81559 * _MIB,
            **_HOPPER,
        ),
        GpuSpec(
            "A100",
            ("A100",),
            108,
            2039,
            40 << 20,
            19.5,
            156,
            312,
            312,
            None,
            19.5,
            624,
            shared_memory_per_sm=166912,
            cuda_name="NVIDIA A100-SXM4-80GB",
            capability=(8, 0),
            memory_bytes=81920 * _MIB,
        ),
        GpuSpec(
            "L40S",
            ("L40S",),
            142,
            864,
            96 << 20,
            91.6,
            183.2,
            362.1,
            362.1,
            733,
            1.4,
            733,
            shared_memory_per_sm=101376,
            cuda_name="NVIDIA L40S",
            capability=(8, 9),
            memory_bytes=46068 * _MIB,
        ),
        GpuSpec(
            "B200",
            ("B200",),
            148,
            8000,
            126 << 20,
            80,
            1100,
            2250,
            2250,
            4500,
            40,
            4500,
            shared_memory_per_sm=232448,
            cuda_name="NVIDIA B200",
            capability=(10, 0),
            memory_bytes=183359 * _MIB,
        ),
    )
}


def known_gpus() -> list[str]:
    return list(GPUS)


def gpu_spec(name: str) -> GpuSpec:
    """The GPU a name stands for (case and spaces aside: `h200`, `H100 PCIe`).

    Raises:
        ConfigError: no GPU of the table has that name; the message lists those it has.
    """
    wanted = name.strip().lower().replace("-", " ")
    for spec in GPUS.values():
        if spec.name.lower() == wanted:
            return spec
    raise ConfigError(
        f"unknown target GPU {name!r}; adaexplore knows the peaks of {', '.join(GPUS)} (choose one of them)"
    )


def gpu_for_device(device_name: str) -> GpuSpec | None:
    """The table's GPU for a name as CUDA reports it ("NVIDIA H200"), or None for one it does not hold. The
    longest match wins, so "H100 PCIe" is not taken for an H100 SXM."""
    found = [
        (len(match), spec) for spec in GPUS.values() for match in spec.matches if match.lower() in device_name.lower()
    ]
    return max(found, key=lambda item: item[0])[1] if found else None
