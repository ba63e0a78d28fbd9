"""What one forward call does at the task's full sizes, as the workers record it without running it on a GPU:
each PyTorch operator (its FLOPs, the precision they run in, the bytes it reads and writes) and each Triton launch
(per compiled config: its programs, its tensor-core and CUDA-core work by precision, the bytes it reads and writes,
its registers and shared memory). Plain data, the same on both sides of a worker; `_estimate` and `_sol` turn it
into times for a GPU."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DOT_PRECISIONS", "ForwardWork", "LaunchConfig", "LaunchWork", "OpWork", "TaskWork"]

# How a matrix multiply's FLOPs are done: on the tensor cores in tf32 (one product, or Triton's three-product
# split `tf32x3`), fp16, bf16, fp8, int8 or fp64; or on the CUDA cores in fp32 (`ieee`, and every fp32 library
# matmul with TF32 off).
DOT_PRECISIONS = ("tf32", "tf32x3", "ieee", "fp16", "bf16", "fp8", "int8", "fp64")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OpWork(_Model):
    """One PyTorch operator call."""

    kind: Literal["op"] = "op"
    op: str  # the ATen operator, `aten.addmm`
    # matmul, conv and attention have FLOPs that PyTorch's own counter knows; memory operators move bytes;
    # views and allocations move none; an operator of none of these kinds is counted by its bytes alone
    category: Literal["matmul", "conv", "attention", "memory", "view", "uncounted"]
    flops: float = 0.0
    dtype: str = "float32"  # the dtype its math runs in (its first floating input's)
    bytes_read: float = 0.0
    bytes_written: float = 0.0


class LaunchConfig(_Model):
    """One compiled config of a Triton launch at full size: what its intermediate representation does per
    program, times its programs, and what the assembler gave it."""

    config: str
    programs: int
    num_warps: int
    num_stages: int
    registers: int | None = None
    shared_memory: int = 0
    spilled: bool = False
    # bytes per thread the assembler spilled to local memory and read back (stores plus loads)
    spill_bytes: int = 0
    # the assembler serialized the tensor-core instructions (a ptxas warning)
    serialized_mma: bool = False
    # the dots use Hopper's warp-group MMA (wgmma); False: the older per-warp path (tiles too small for it)
    wgmma: bool = True
    # FLOPs of `tl.dot` by precision (DOT_PRECISIONS), over all programs
    dot_flops: dict[str, float] = Field(default_factory=dict)
    # the smallest dot tile (M, N, K) of the kernel: small tiles keep the tensor cores from their peak
    dot_tile: tuple[int, int, int] | None = None
    # whether the dot's K x N operand is loaded contiguous along K (`x @ w.T`), or along N (False: `a @ b`);
    # None: no dot, or not read from the compiled code (tensor-descriptor loads, an operand made in registers)
    b_k_major: bool | None = None
    # element-wise work on blocks, over all programs: issue slots of the CUDA cores' lanes, and operations of the
    # special-function units (exp, log, sqrt ...)
    simt: float = 0.0
    special: float = 0.0
    # bytes the launch reads from and writes to device memory: each tensor argument's loads and stores over all
    # programs, but at most its size (what stays in the caches is read once)
    bytes_read: float = 0.0
    bytes_written: float = 0.0
    # what the programs' loads and stores ask for in all, cache hits included
    requested_bytes: float = 0.0
    # False: a loop's trip count or a branch depended on data and was guessed
    exact: bool = True
    note: str = ""


class LaunchWork(_Model):
    kind: Literal["launch"] = "launch"
    kernel: str
    # the config the launch names, or every config of an autotuned kernel (a GPU's autotuner keeps the fastest)
    configs: list[LaunchConfig]
    autotuned: bool = False


Step = Annotated[OpWork | LaunchWork, Field(discriminator="kind")]


class ForwardWork(_Model):
    """One forward call, step by step. `complete` False: the record stopped early (host code that needs data
    a shape-only pass does not compute); `note` says where."""

    steps: list[Step] = Field(default_factory=list)
    complete: bool = True
    note: str = ""


class TaskWork(_Model):
    """The reference of a task at its full sizes: its forward, and the least it must move (its inputs and
    parameters read once, its outputs written once)."""

    forward: ForwardWork
    input_bytes: float
    parameter_bytes: float
    output_bytes: float

    @property
    def min_bytes(self) -> float:
        return self.input_bytes + self.parameter_bytes + self.output_bytes

    def uncounted(self) -> list[str]:
        """The operators whose FLOPs the counter does not know (their bytes are counted)."""
        return sorted({s.op for s in self.forward.steps if isinstance(s, OpWork) and s.category == "uncounted"})
