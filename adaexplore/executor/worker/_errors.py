"""Turning an exception raised by candidate code into a status and a message a model can act on."""

from __future__ import annotations

import traceback
from pathlib import Path
from types import TracebackType

from triton.compiler.errors import CompilationError
from triton.runtime.errors import OutOfResources

from adaexplore.executor._models import ErrorDetail, Status

__all__ = ["classify", "describe"]

_TRITON_ROOT = str(Path(__import__("triton").__file__).parent)
_COMPILE_PATHS = (
    f"{_TRITON_ROOT}/compiler/",
    f"{_TRITON_ROOT}/language/",
    f"{_TRITON_ROOT}/runtime/jit.py",
    f"{_TRITON_ROOT}/backends/",
)
_OWN_ROOT = str(Path(__file__).resolve().parents[2])
# Frames from these packages are machinery around the candidate's code, not the place to fix it.
_NOISE_ROOTS = (_OWN_ROOT, str(Path(__import__("torch").__file__).parent), _TRITON_ROOT + "/runtime/")
_TRACEBACK_LIMIT = 6000


def _files(tb: TracebackType | None) -> list[str]:
    files = []
    while tb is not None:
        files.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    return files


def _cuda_fault(exc: BaseException) -> bool:
    text = f"{type(exc).__name__}: {exc}"
    return "CUDA error" in text or "Triton Error [CUDA]" in text or type(exc).__name__ == "AcceleratorError"


def classify(exc: BaseException) -> Status:
    """compile_error for what the Triton compiler (or its launch-time checks) rejects, infra_error for
    what only our CPU backends cannot run, runtime_error for the rest."""
    from adaexplore.executor.worker._interpret_shim import BackendLimitation, KernelOOBError

    cause = exc
    # The interpreter wraps every kernel-level error as InterpreterError(repr(original)) from original.
    if type(exc).__name__ == "InterpreterError" and exc.__cause__ is not None:
        cause = exc.__cause__
    if isinstance(cause, BackendLimitation):
        return Status.infra_error
    if isinstance(cause, KernelOOBError) or _cuda_fault(cause):
        return Status.runtime_error
    if isinstance(cause, CompilationError | OutOfResources):
        return Status.compile_error
    if isinstance(cause, AssertionError) and "device_assert failed" in str(cause):
        return Status.runtime_error
    # Errors raised by Triton's own checks (semantic checks, argument binding, launch options) are compile
    # errors on a GPU even where the interpreter raises them while running.
    files = _files(cause.__traceback__)
    if files and files[-1].startswith(_COMPILE_PATHS):
        return Status.compile_error
    # Triton binds launch arguments in generated code ("<string>") called from jit.py: a missing or
    # misnamed kernel argument fails there.
    if files and files[-1] == "<string>" and any(f.startswith(_COMPILE_PATHS) for f in files):
        return Status.compile_error
    return Status.runtime_error


def describe(exc: BaseException, phase: str, replacements: dict[str, str]) -> ErrorDetail:
    """The exception as text, with the evaluator's own frames and temporary paths left out."""
    cause = exc.__cause__ if type(exc).__name__ == "InterpreterError" and exc.__cause__ is not None else exc
    all_frames = traceback.extract_tb(cause.__traceback__)
    frames = [f for f in all_frames[:-1] if not f.filename.startswith(_NOISE_ROOTS)] + all_frames[-1:]
    lines = traceback.format_list(frames[-12:])
    text = "".join(lines) + "".join(traceback.format_exception_only(type(cause), cause))
    message = f"{type(cause).__name__}: {cause}"
    for old, new in replacements.items():
        text = text.replace(old, new)
        message = message.replace(old, new)
    if len(text) > _TRACEBACK_LIMIT:
        text = text[: _TRACEBACK_LIMIT // 2] + "\n…\n" + text[-_TRACEBACK_LIMIT // 2 :]
    return ErrorDetail(type=type(cause).__name__, message=message[:4000], phase=phase, traceback=text)
