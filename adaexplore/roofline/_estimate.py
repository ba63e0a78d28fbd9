"""A forward's time on a GPU, estimated from what it launches: a roofline per step with measured efficiencies.

Each step of a `ForwardWork` takes the longest of the times its work needs at the rate it can get, plus the cost of
a launch:

- a Triton launch: its `tl.dot` FLOPs at the tensor cores' rate for their precision (`tf32x3` is three tf32
  products; `ieee` runs on the CUDA cores), its bytes at the memory's, and what its programs ask of the caches.
  Its programs run in waves over the streaming multiprocessors (a grid a little larger than the GPU takes two
  waves), and too few resident warps leave the memory idle. The tensor cores lose speed to tiles too small for
  Hopper's warp-group MMA, to MMAs the assembler serialized, to spills, to a pipeline too shallow to hide the
  loads (stages x BLOCK_K, less for a tile under 128 x 128), and to a tf32 operand that lies along N (rewritten
  K-major in the loop); an `ieee` dot, to an operand that lies along K (`_layout`). An autotuned kernel takes its
  fastest config.
- a PyTorch operator: its FLOPs at the library's rate for the precision it runs in (fp32 matmuls and convolutions
  on the CUDA cores unless the mode lets TF32 in), its bytes at the memory's.

The efficiencies (`Calibration`) were fitted on an H200 to measured times of kernels and references
(`benchmarks/calibrate_estimate.py`, `benchmarks/README.md`); they are fractions of the GPU's datasheet peaks,
so the same model serves the other GPUs of the table, less surely.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from adaexplore.roofline._gpus import GpuSpec
from adaexplore.roofline._work import ForwardWork, LaunchConfig, LaunchWork, OpWork

__all__ = ["CALIBRATION", "Calibration", "Part", "estimate_forward", "estimate_reference", "kernel_estimate"]


@dataclass(frozen=True)
class Calibration:
    """Fractions of a GPU's peaks that kernels reach, and fixed costs. Fitted on an H200 to the kernels of the
    shared corpus (`benchmarks/estimate_corpus.py fit`): tensor_cores, split_products, pipeline_exponent,
    spill_bytes, cuda_cores, elementwise, serial_share, memory, cache_rate and the library_* rates the corpus's
    eager times pin down; tf32_n_major, fma_k_major, cuda_cores and pipeline_exponent were fitted last (the others
    held), when the record learned which way a dot's operand lies and the pipeline's depth its tile's size. The
    others (small_tiles, serialized, busy_warps, program_us, library_tensor_cores) are priors that no measured kernel
    of the corpus exercises yet."""

    # Triton dots on the tensor cores: plain products with wgmma; Triton's tf32x3, which splits the operands into
    # high and low halves at every step of the loop; the older path (tiles too small for wgmma); serialized MMAs
    tensor_cores: float = 1.0
    split_products: float = 0.558
    small_tiles: float = 0.4
    serialized: float = 0.55
    # K elements in flight ((stages - 1) x BLOCK_K, scaled down by a tile's M x N where it is under 128 x 128) past
    # which a dot's loads no longer keep the tensor cores waiting, and how steeply fewer cost:
    # efficiency x min(1, in flight / pipeline_k) ** pipeline_exponent
    pipeline_k: float = 128.0
    pipeline_exponent: float = 0.362
    # registers spilled to local memory slow a dot's loop: efficiency / (1 + (spilled bytes / spill_bytes) ** 2)
    spill_bytes: float = 6950.0
    # tf32 and tf32x3 dots whose K x N operand lies along N (`a @ b`): the warp-group MMA reads 32-bit operands
    # K-major only, so the tile is rewritten through registers at every step of the loop
    tf32_n_major: float = 0.494
    # Triton's CUDA-core work: ieee dots (fused multiply-adds in a loop) and element-wise arithmetic on blocks
    cuda_cores: float = 0.658
    # ieee dots whose K x N operand lies along K (`x @ w.T`): each thread reads its row of it from shared memory
    # one element at a time instead of in wide loads
    fma_k_major: float = 0.644
    elementwise: float = 0.214
    # how much of the shorter of a launch's tensor-core and CUDA-core times adds to the longer (0: they overlap
    # fully; element-wise work inside a dot's loop, an operand split in registers, waits for the MMAs)
    serial_share: float = 0.943
    # Triton loads and stores against HBM, and what the programs ask of the caches (as a multiple of HBM's rate)
    memory: float = 0.889
    cache_rate: float = 2.54
    # resident warps per streaming multiprocessor that keep the memory busy
    busy_warps: float = 16.0
    # each program's start and end, per streaming multiprocessor, in microseconds
    program_us: float = 0.02
    # PyTorch's libraries: fp32 GEMM and convolution on the CUDA cores, anything on the tensor cores, and
    # elementwise and reduction kernels against HBM
    library_gemm: float = 0.769
    library_conv: float = 0.613
    library_tensor_cores: float = 0.7
    library_memory: float = 0.5
    launch_us: float | None = None  # None: the GPU table's


CALIBRATION = Calibration()
# the dot tile (M x N) whose MMA work per K element sets `pipeline_k`: a smaller tile's stages hide less
FULL_TILE = 128 * 128


@dataclass
class Part:
    """One step's estimated time and what bounds it."""

    step: str
    ms: float
    # "tensor cores (tf32x3)", "CUDA cores (fp32 dots)", "CUDA cores (element-wise)", "CUDA cores (fp32)" (a library
    # call), "memory", "caches", "launch"
    limit: str
    flops: float = 0.0
    bytes: float = 0.0
    detail: str = ""


@dataclass
class ForwardEstimate:
    ms: float
    parts: list[Part] = field(default_factory=list)


def _launch_us(gpu: GpuSpec, cal: Calibration) -> float:
    return cal.launch_us if cal.launch_us is not None else gpu.launch_us


def _dot_rate(gpu: GpuSpec, precision: str) -> tuple[float, int, str]:
    """FLOP/s of the unit that does a dot of this precision, how many products each FLOP takes there (three for
    Triton's tf32x3 split), and the unit's name."""
    if precision == "ieee":
        return gpu.fp32_tflops * 1e12, 1, "CUDA cores (fp32)"
    if precision == "tf32x3":
        return gpu.tf32_tflops * 1e12, 3, "tensor cores (tf32x3)"
    peak = gpu.peak_tflops(precision)
    if peak is None:  # a precision this GPU lacks (fp8 on an A100) runs converted to the next one up
        peak = gpu.fp16_tflops
    return peak * 1e12, 1, f"tensor cores ({precision})"


def _resident(config: LaunchConfig, gpu: GpuSpec) -> int:
    """Programs of this config one streaming multiprocessor holds at once."""
    warps = max(1, config.num_warps)
    threads = warps * 32
    registers = config.registers or 64
    per_warp = math.ceil(registers * 32 / 256) * 256  # registers are given out 256 at a time per warp
    by_registers = gpu.registers_per_sm // (per_warp * warps)
    by_shared = gpu.shared_memory_per_sm // config.shared_memory if config.shared_memory else gpu.blocks_per_sm
    by_threads = gpu.threads_per_sm // threads
    return max(1, min(gpu.blocks_per_sm, by_registers, by_shared, by_threads))


def _launch_part(name: str, config: LaunchConfig, gpu: GpuSpec, cal: Calibration) -> Part:
    if config.programs <= 0:  # Triton's launcher starts nothing for a grid of no programs
        return Part(name, 0.0, "nothing (a grid of no programs)")
    programs = config.programs
    sms = gpu.sms
    waves = math.ceil(programs / sms) * sms / programs  # >= 1: the last wave's idle multiprocessors
    resident = min(_resident(config, gpu), math.ceil(programs / sms))
    busy = min(1.0, min(programs, sms) / sms * resident * max(1, config.num_warps) / cal.busy_warps)
    tensor_s, unit, flops = 0.0, "", 0.0
    depth = (max(config.num_stages, 2) - 1) * (config.dot_tile[2] if config.dot_tile else cal.pipeline_k)
    if config.dot_tile:  # a tile smaller than 128 x 128 has less MMA work per stage to hide the next loads behind
        depth *= min(1.0, config.dot_tile[0] * config.dot_tile[1] / FULL_TILE)
    pipelined = min(1.0, depth / cal.pipeline_k) ** cal.pipeline_exponent
    # the CUDA cores' issue slots: element-wise work and the special-function units' operations (a quarter warp's
    # lanes each), and ieee dots (one fused multiply-add per two FLOPs), each at its own efficiency
    lane_rate = gpu.fp32_tflops / 2 * 1e12
    elementwise_s = (config.simt + 8 * config.special) / (lane_rate * cal.elementwise)
    fma_s = 0.0
    for precision, amount in config.dot_flops.items():
        flops += amount
        if precision == "ieee":
            layout = cal.fma_k_major if config.b_k_major else 1.0
            fma_s += amount / 2 / (lane_rate * cal.cuda_cores * layout)
            continue
        rate, products, unit_here = _dot_rate(gpu, precision)
        efficiency = cal.split_products if precision == "tf32x3" else cal.tensor_cores
        if precision in ("tf32", "tf32x3") and config.wgmma and config.b_k_major is False:
            efficiency *= cal.tf32_n_major
        if not config.wgmma:
            efficiency = min(efficiency, cal.small_tiles)
        if config.serialized_mma:
            efficiency *= cal.serialized
        efficiency /= 1 + (config.spill_bytes / cal.spill_bytes) ** 2
        seconds = amount * products / (rate * efficiency * pipelined) * waves
        if seconds > tensor_s:
            unit = unit_here
        tensor_s += seconds
    cuda_s = (elementwise_s + fma_s) * waves
    compute_s = max(tensor_s, cuda_s) + cal.serial_share * min(tensor_s, cuda_s)
    if cuda_s > tensor_s:
        # the CUDA cores bound the launch: by its fp32 dots, or by its element-wise work (an operand split in the
        # loop, an epilogue) while its fp16, bf16 or tf32 dots stay on the tensor cores
        unit = "CUDA cores (fp32 dots)" if fma_s > elementwise_s else "CUDA cores (element-wise)"
    moved = config.bytes_read + config.bytes_written
    memory_s = moved / (gpu.hbm_gbps * 1e9 * cal.memory * max(busy, 1e-3))
    cache_s = config.requested_bytes / (gpu.hbm_gbps * 1e9 * cal.cache_rate)
    program_s = math.ceil(programs / sms) * cal.program_us * 1e-6
    launch_s = _launch_us(gpu, cal) * 1e-6
    limits = [(compute_s, unit or "compute"), (memory_s, "memory"), (cache_s, "caches")]
    longest, limit = max(limits, key=lambda item: item[0])
    if longest < launch_s:
        limit = "launch"
    total = longest + program_s + launch_s
    detail = [_dots_said(config.dot_flops)] if flops else []
    detail.append(f"{moved / 1e6:.3g} MB")
    if config.serialized_mma:
        detail.append("its MMAs are serialized")
    if config.spill_bytes:
        detail.append(f"{config.spill_bytes} B/thread spilled")
    if config.b_k_major is False and any(p in ("tf32", "tf32x3") for p in config.dot_flops) and config.wgmma:
        detail.append("a tf32 operand along N (rewritten K-major in the loop)")
    if config.b_k_major and "ieee" in config.dot_flops:
        detail.append("an fp32 dot's operand along K (read element by element)")
    if flops and not config.wgmma and any(p != "ieee" for p in config.dot_flops):
        detail.append("tiles too small for wgmma")
    return Part(name, total * 1e3, limit, flops, moved, ", ".join(detail))


def _dots_said(dot_flops: dict[str, float]) -> str:
    """Say "412 GFLOP of bf16 dots (tensor cores)": each precision's FLOPs and the unit that does them."""
    said = []
    for precision, amount in sorted(dot_flops.items(), key=lambda item: -item[1]):
        if precision == "ieee":
            said.append(f"{amount / 1e9:.3g} GFLOP of fp32 dots (CUDA cores)")
        else:
            said.append(f"{amount / 1e9:.3g} GFLOP of {precision} dots (tensor cores)")
    return ", ".join(said)


def _op_part(op: OpWork, gpu: GpuSpec, cal: Calibration, tf32_matmul: bool, tf32_conv: bool) -> Part | None:
    if op.category == "view":
        return None
    name = op.op.removeprefix("aten.")
    moved = op.bytes_read + op.bytes_written
    memory_s = moved / (gpu.hbm_gbps * 1e9 * cal.library_memory)
    compute_s, unit = 0.0, ""
    if op.flops:
        dtype = op.dtype
        if dtype in ("float32", "float"):
            tf32 = tf32_conv if op.category == "conv" else tf32_matmul
            if tf32:
                rate, unit, efficiency = gpu.tf32_tflops, "tensor cores (tf32)", cal.library_tensor_cores
            else:
                rate, unit = gpu.fp32_tflops, "CUDA cores (fp32)"
                efficiency = cal.library_conv if op.category == "conv" else cal.library_gemm
        else:
            precision = {"bfloat16": "bf16", "float16": "fp16", "float64": "fp64"}.get(dtype, "fp16")
            rate = gpu.peak_tflops(precision) or gpu.fp16_tflops
            unit, efficiency = f"tensor cores ({precision})", cal.library_tensor_cores
        compute_s = op.flops / (rate * 1e12 * efficiency)
    launch_s = _launch_us(gpu, cal) * 1e-6
    longest, limit = max([(compute_s, unit or "compute"), (memory_s, "memory")], key=lambda item: item[0])
    if longest < launch_s:
        limit = "launch"
    detail = f"{op.flops / 1e9:.3g} GFLOP, {moved / 1e6:.3g} MB" if op.flops else f"{moved / 1e6:.3g} MB"
    return Part(name, (longest + launch_s) * 1e3, limit, op.flops, moved, detail)


def estimate_forward(
    work: ForwardWork,
    gpu: GpuSpec,
    *,
    tf32_matmul: bool = False,
    tf32_conv: bool = False,
    calibration: Calibration = CALIBRATION,
) -> ForwardEstimate:
    """The forward's estimated time on `gpu`, in milliseconds, step by step (views and allocations left out).
    `tf32_matmul` / `tf32_conv`: whether PyTorch's fp32 matmuls / convolutions may use TF32 (the mode's flags)."""
    parts: list[Part] = []
    for step in work.steps:
        if isinstance(step, LaunchWork):
            options = [_launch_part(step.kernel, c, gpu, calibration) for c in step.configs]
            if options:
                parts.append(min(options, key=lambda p: p.ms))
        else:
            part = _op_part(step, gpu, calibration, tf32_matmul, tf32_conv)
            if part is not None:
                parts.append(part)
    return ForwardEstimate(sum(p.ms for p in parts), parts)


def estimate_reference(
    work: ForwardWork, gpu: GpuSpec, *, tf32_matmul: bool, tf32_conv: bool, calibration: Calibration = CALIBRATION
) -> ForwardEstimate:
    """The reference's eager time on `gpu` (its operators through PyTorch's libraries)."""
    return estimate_forward(work, gpu, tf32_matmul=tf32_matmul, tf32_conv=tf32_conv, calibration=calibration)


def kernel_estimate(
    candidate: ForwardWork,
    reference: ForwardWork,
    gpu: GpuSpec,
    *,
    tf32_matmul: bool,
    tf32_conv: bool,
    calibration: Calibration = CALIBRATION,
) -> tuple[ForwardEstimate, ForwardEstimate]:
    """The candidate's and the reference's estimates on the same GPU, with the same flags."""
    return (
        estimate_forward(candidate, gpu, tf32_matmul=tf32_matmul, tf32_conv=tf32_conv, calibration=calibration),
        estimate_reference(reference, gpu, tf32_matmul=tf32_matmul, tf32_conv=tf32_conv, calibration=calibration),
    )
