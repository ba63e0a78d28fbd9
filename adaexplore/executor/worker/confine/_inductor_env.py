"""What torch.compile needs to run inside the judge's sandbox, and how its failures are told.

Two things inductor does on its own path fail in the sandbox, which lets a worker execute only the programs
it was given when it was confined (Triton's ptxas among them):

- It writes a comment with `nvcc --version` into the debug repro it builds for every graph, and it copes
  only with an nvcc that is missing. From the sandbox the search for nvcc can end in EACCES instead, and
  inductor raised. The comment is debug text nobody reads here: a failure to run nvcc becomes a line
  saying so.
- It points Triton at the ptxas that torch ships (`TRITON_PTXAS_PATH`), unless that variable is set
  already, and that ptxas is not among the programs the sandbox allows. The judge sets the variable to the
  ptxas Triton resolved when the sandbox was built, which is the one it allows.
- It compiles a graph's kernels in a pool of subprocesses, where the machine has more than one core, and
  those children of a confined judge failed on every graph after the first one on the H200. The judge
  compiles in its own process instead (`compile_threads = 1`): slower for a large graph, and once per
  reference, since the timing is cached.
"""

from __future__ import annotations

import os

__all__ = ["compile_failure", "prepare_inductor", "tolerate_unrunnable_nvcc"]

_NOTE = "# CUDA Info: nvcc could not be run here\n"
_LIMIT = 600


def prepare_inductor() -> None:
    """Ready torch.compile for the sandbox (idempotent): the nvcc comment, Triton's ptxas, no compile pool."""
    import torch._inductor.config

    tolerate_unrunnable_nvcc()
    pin_triton_ptxas()
    torch._inductor.config.compile_threads = 1


def pin_triton_ptxas() -> None:
    """Keep inductor from switching Triton to another ptxas than the one it resolves now."""
    if os.environ.get("TRITON_PTXAS_PATH"):
        return
    from triton import knobs

    try:
        path = knobs.nvidia.ptxas.path
    except Exception:  # no ptxas for Triton at all: inductor's own choice is the only one left
        return
    os.environ["TRITON_PTXAS_PATH"] = path


def tolerate_unrunnable_nvcc() -> None:
    """Make inductor's CUDA info comment survive an nvcc that cannot be run (idempotent)."""
    from torch._dynamo import debug_utils
    from torch._dynamo.repro import after_aot

    original = getattr(debug_utils, "_cuda_system_info_comment", None)
    if original is None or getattr(original, "_adaexplore_tolerant", False):
        return

    def comment() -> str:
        try:
            return str(original())
        except OSError:
            return _NOTE

    comment._adaexplore_tolerant = True  # type: ignore[attr-defined]  # our mark on the function
    debug_utils._cuda_system_info_comment = comment  # type: ignore[assignment]  # patched on purpose, uncached
    if getattr(after_aot, "_cuda_system_info_comment", None) is original:
        after_aot._cuda_system_info_comment = comment  # type: ignore[assignment]  # imported by name there


def compile_failure(exc: BaseException) -> str:
    """One short line on why torch.compile of a reference failed: the exception's first line and, where it
    carries a traceback (a compile subprocess's), the traceback's last line, which names the error; without
    inductor's advice on debugging variables."""
    text = str(exc).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip() and "TORCHDYNAMO_VERBOSE" not in line]
    if any(line.startswith("Traceback (most recent call last)") for line in lines):
        lines = [lines[0], lines[-1]] if len(lines) > 1 else lines
    detail = " ".join(lines[:3])
    if len(detail) > _LIMIT:
        detail = detail[: _LIMIT - 1] + "…"
    return (
        f"torch.compile of the reference failed: {type(exc).__name__}: {detail}"
        if detail
        else (f"torch.compile of the reference failed: {type(exc).__name__}")
    )
