"""How fast a task can go and how fast a kernel will go on a GPU, computed without one (DESIGN §7).

`speed_of_light` bounds a task's time on a GPU model from what its reference must compute and move at full size,
its products by the fastest path its tolerance admits (`matmul_path`);
`estimate` predicts a kernel's time from the launches and library calls of its forward. Both read the records
the workers make (`TaskWork`, `ForwardWork`) and the peaks of the GPU table (`GPUS`). Pure Python, no torch.
"""

from adaexplore.roofline._estimate import (
    CALIBRATION,
    Calibration,
    Part,
    estimate_forward,
    estimate_reference,
    kernel_estimate,
)
from adaexplore.roofline._gpus import DEFAULT_TARGET, GPUS, GpuSpec, gpu_for_device, gpu_spec, known_gpus
from adaexplore.roofline._layout import b_tile_k_major
from adaexplore.roofline._refit import (
    FACTOR_GROUPS,
    MIN_KERNELS,
    GpuCalibration,
    Refit,
    TimedKernel,
    base_digest,
    refit,
    scaled,
)
from adaexplore.roofline._sol import (
    PATHS,
    STRICT_FP32_BUDGET,
    MatmulPath,
    matmul_path,
    normwise_budget,
    speed_of_light,
)
from adaexplore.roofline._ttir import KernelIR, ProgramCounts, count_launch, parse_ttir
from adaexplore.roofline._work import DOT_PRECISIONS, ForwardWork, LaunchConfig, LaunchWork, OpWork, TaskWork

__all__ = [
    "CALIBRATION",
    "DEFAULT_TARGET",
    "DOT_PRECISIONS",
    "FACTOR_GROUPS",
    "GPUS",
    "MIN_KERNELS",
    "PATHS",
    "STRICT_FP32_BUDGET",
    "Calibration",
    "ForwardWork",
    "GpuCalibration",
    "GpuSpec",
    "KernelIR",
    "LaunchConfig",
    "LaunchWork",
    "MatmulPath",
    "OpWork",
    "Part",
    "ProgramCounts",
    "Refit",
    "TaskWork",
    "TimedKernel",
    "b_tile_k_major",
    "base_digest",
    "count_launch",
    "estimate_forward",
    "estimate_reference",
    "gpu_for_device",
    "gpu_spec",
    "kernel_estimate",
    "known_gpus",
    "matmul_path",
    "normwise_budget",
    "parse_ttir",
    "refit",
    "scaled",
    "speed_of_light",
]
