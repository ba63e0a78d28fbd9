"""Turning an exception raised by candidate code into a status and a message a model can act on."""

from __future__ import annotations

import errno
import re
import sys
import traceback
from pathlib import Path
from types import FrameType, TracebackType

from triton.compiler.errors import CompilationError
from triton.runtime.errors import OutOfResources

from adaexplore.domain import ErrorDetail, Status
from adaexplore.executor.worker.confine._faults import (
    CANDIDATE_MODULE,
    BackendLimitation,
    CandidateFault,
    DeviceAssertFailed,
    EvaluatorFault,
    KernelOOBError,
    MadeHere,
    ReachRefused,
    TargetCompileFailed,
    made_stack,
)

__all__ = [
    "classify",
    "describe",
    "evaluator_fault",
    "fault_message",
    "held_by_candidate",
    "kept_by_candidate",
    "made_here",
]


def _package_root(name: str) -> str:
    file = __import__(name).__file__
    assert file is not None  # a regular package, imported from its files
    return str(Path(file).parent)


_TRITON_ROOT = _package_root("triton")
_COMPILE_PATHS = (
    f"{_TRITON_ROOT}/compiler/",
    f"{_TRITON_ROOT}/language/",
    f"{_TRITON_ROOT}/runtime/jit.py",
    f"{_TRITON_ROOT}/backends/",
)
_OWN_ROOT = str(Path(__file__).resolve().parents[3])
# The evaluator's own code: a failure that starts here is the evaluator's, unless it is one of its checks.
_EXECUTOR_ROOT = str(Path(__file__).resolve().parents[2]) + "/"
# Frames of the evaluator that stand in for Python's or torch's own (the candidate's builtins, the CUDA-on-CPU
# mode that every torch call passes through): what fails in them fails in the call the candidate made.
_TRANSPARENT = {
    "_importing.py": frozenset({"restricted_import", "checked_getattr", "checked_type"}),
    "_cuda_on_cpu.py": frozenset(
        {
            "__torch_function__",
            "<lambda>",
            # torch.cuda's device queries, answered as the target GPU
            "get_device_properties",
            "get_device_capability",
            "get_device_name",
            "device_count",
            "current_device",
            "_device_index",
        }
    ),
}
# Python's message when a call does not fit the function's parameters: the callee's frame never starts.
_BAD_CALL = re.compile(
    r"^([\w.<>]+)\(\) (?:got an unexpected keyword argument|got multiple values|missing \d+ required|takes )"
)
# Frames from these packages are machinery around the candidate's code, not the place to fix it.
_NOISE_ROOTS = (_OWN_ROOT, _package_root("torch"), _TRITON_ROOT + "/runtime/")
_TRACEBACK_LIMIT = 6000


# Exhaustion of the candidate's own limits (its memory cap, its files, its disk), wherever it surfaces: a stand-in
# of ours that cannot allocate fails because the candidate holds the memory.
_LIMIT_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.EFBIG, errno.ENOSPC, errno.EDQUOT})


def _files(tb: TracebackType | None) -> list[str]:
    files = []
    while tb is not None:
        files.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    return files


def _cuda_fault(exc: BaseException) -> bool:
    text = f"{type(exc).__name__}: {exc}"
    return "CUDA error" in text or "Triton Error [CUDA]" in text or type(exc).__name__ == "AcceleratorError"


def _chain(exc: BaseException) -> list[BaseException]:
    """`exc` and the exceptions it was raised from (the interpreter and the compiler wrap the original)."""
    found: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(found) < 16 and current not in found:
        found.append(current)
        current = current.__cause__
    return found


def _own(frame: traceback.FrameSummary) -> bool:
    if not frame.filename.startswith(_EXECUTOR_ROOT):
        return False
    return frame.name not in _TRANSPARENT.get(Path(frame.filename).name, frozenset())


def _candidates(tb: TracebackType | None) -> list[bool]:
    """Per frame of `tb`: whether it runs the candidate's code (host code or a kernel the interpreter runs)."""
    marks = []
    while tb is not None:
        marks.append(tb.tb_frame.f_globals.get("__name__") == CANDIDATE_MODULE)
        tb = tb.tb_next
    return marks


def _defined_here(qualname: str) -> bool:
    """Whether the function a qualified name names is defined in one of the evaluator's modules."""
    head = qualname.split(".")[0]
    for name, module in list(sys.modules.items()):
        if name.startswith("adaexplore.executor") and module is not None:
            value = vars(module).get(head)
            if value is not None and getattr(value, "__module__", None) == name:
                return True
    return False


def _defined_by_candidate(qualname: str) -> bool:
    """Whether a qualified name names a function or class the candidate's module defines."""
    module = sys.modules.get(CANDIDATE_MODULE)
    value = vars(module).get(qualname.split(".")[0]) if module is not None else None
    return value is not None and getattr(value, "__module__", None) == CANDIDATE_MODULE


def _is_candidate(frame: FrameType) -> bool:
    return frame.f_globals.get("__name__") == CANDIDATE_MODULE


def made_here(exc: BaseException) -> bool:
    """Whether the evaluator made `exc` and it has unwound only the call stack it was made in, caught outside the
    candidate's code: its traceback's frames, from where it was caught down to where it was raised, are that
    stack's innermost frames in order, and the outermost of them is not the candidate's."""
    stack = made_stack(exc)
    tb = exc.__traceback__
    if stack is None or tb is None or _is_candidate(tb.tb_frame):
        return False
    frames = []
    while tb is not None:
        frames.append((id(tb.tb_frame), tb.tb_frame.f_code))
        tb = tb.tb_next
    frames.reverse()
    return tuple(frames) == stack[: len(frames)]


def _raised_by_candidate(exc: BaseException) -> bool:
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and _is_candidate(tb.tb_frame)


def _trusted_chain(exc: BaseException) -> list[BaseException]:
    """`exc` and the causes chained to it by code other than the candidate's: a `raise ... from kept` of the
    candidate's chains what it kept, and that is its own."""
    found: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(found) < 16 and current not in found:
        found.append(current)
        if _raised_by_candidate(current):
            break
        current = current.__cause__
    return found


def held_by_candidate(exc: BaseException) -> bool:
    """Whether the candidate's code caught `exc` and kept it, to raise it (or raise from it) later: its
    traceback begins in a candidate's frame (where it was caught), or joins a candidate's frame to one that frame
    did not call, or that did not call it (where a kept exception was raised again). An exception that merely
    passed through the candidate's frames, unwinding a real call stack, was not held; one that passed through a
    generator of the candidate's is taken as held (a finished generator's frame no longer says who called it)."""
    tb = exc.__traceback__
    if tb is None:
        return False
    if _is_candidate(tb.tb_frame):
        return True
    while tb.tb_next is not None:
        caller, callee = tb.tb_frame, tb.tb_next.tb_frame
        if (_is_candidate(caller) or _is_candidate(callee)) and callee.f_back is not caller:
            return True
        tb = tb.tb_next
    return False


def kept_by_candidate(exc: BaseException) -> bool:
    """Whether the candidate kept an exception of `exc`'s chain and raised it (or raised from it) later. Such a
    failure is its own, whoever raised the exception first: it may have provoked one of the evaluator's on
    purpose, to raise it where its own kernel fails."""
    trusted = _trusted_chain(exc)
    if len(trusted) < len(_chain(exc)):
        return True
    return any(
        (made_stack(e) is not None and not made_here(e)) if isinstance(e, MadeHere) else held_by_candidate(e)
        for e in trusted
    )


def _candidates_limit(exc: BaseException) -> bool:
    """An exhaustion of the limits the candidate's worker runs under (see `_LIMIT_ERRNOS`)."""
    if isinstance(exc, MemoryError | RecursionError):
        return True
    return isinstance(exc, OSError) and exc.errno in _LIMIT_ERRNOS


def _own_failure(exc: BaseException) -> str | None:
    """Where the evaluator's own code failed in `exc` (not through the candidate's call of it), or None."""
    if isinstance(exc, EvaluatorFault):
        return "one of its stand-ins" if made_here(exc) else None
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return None
    marks = _candidates(exc.__traceback__)
    last = frames[-1]
    match = _BAD_CALL.match(str(exc)) if isinstance(exc, TypeError) else None
    if match and _defined_by_candidate(match.group(1)):
        # our call of the candidate's function (ModelNew(*init_inputs)) did not fit its parameters
        return None
    if _own(last):
        start = len(frames) - 1
        while start > 0 and _own(frames[start - 1]):
            start -= 1
        # reached straight from the candidate's code: the candidate called it (wrongly)
        if start > 0 and marks[start - 1]:
            return None
        return f"{Path(last.filename).name}, line {last.lineno}, in {last.name}"
    if match and not marks[-1] and _defined_here(match.group(1)):
        return f"{match.group(1)}, called by {Path(last.filename).name}, line {last.lineno}"
    return None


def evaluator_fault(exc: BaseException) -> str | None:
    """Where the evaluator failed when the failure of `exc` is its own, not the candidate's: a failure that
    starts in the evaluator's code (its shims of Triton's interpreter, its wrappers of Triton's launch), other
    than its checks of the candidate; None otherwise."""

    chain = _chain(exc)
    if any(isinstance(e, CandidateFault | BackendLimitation) or _candidates_limit(e) for e in chain):
        return None
    if kept_by_candidate(exc):
        return None
    for e in _trusted_chain(exc):
        if isinstance(e, TargetCompileFailed):  # raised by the evaluator for the compiler's error, its cause
            continue
        where = _own_failure(e)
        if where is not None:
            return where
    return None


def fault_message(exc: BaseException, where: str) -> str:
    """For the kernel's writer: the evaluator failed, not the kernel, and what to report."""
    root = _chain(exc)[-1]
    return (
        f"This is the evaluator's fault, not your kernel's: its own code ({where}) raised "
        f"{type(root).__name__}: {root}. Nothing is known about the kernel from this run; report it to the "
        "evaluator's maintainers with the kernel and this message."
    )


def classify(exc: BaseException) -> Status:
    """compile_error for what the Triton compiler (or its launch-time checks) rejects, infra_error for what
    only our CPU backends cannot run and for failures of the evaluator's own code, runtime_error for the rest."""

    cause = exc
    # The interpreter wraps every kernel-level error as InterpreterError(repr(original)) from original.
    if type(exc).__name__ == "InterpreterError" and exc.__cause__ is not None:
        cause = exc.__cause__

    if any(isinstance(e, ReachRefused) for e in _chain(exc)):
        return Status.rejected
    limitation = isinstance(cause, BackendLimitation) and made_here(cause) and not kept_by_candidate(exc)
    if limitation or evaluator_fault(exc) is not None:
        return Status.infra_error
    if isinstance(cause, TargetCompileFailed):
        return Status.compile_error
    if isinstance(cause, KernelOOBError | DeviceAssertFailed) or _cuda_fault(cause):
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
    if evaluator_fault(exc) is not None:
        # the evaluator's own frames are the ones to read
        cause = _chain(exc)[-1]
        frames = traceback.extract_tb(cause.__traceback__)
    lines = traceback.format_list(frames[-12:])
    text = "".join(lines) + "".join(traceback.format_exception_only(type(cause), cause))
    name = getattr(cause, "shown_as", type(cause).__name__)
    message = f"{name}: {cause}"
    for old, new in replacements.items():
        text = text.replace(old, new)
        message = message.replace(old, new)
    if len(text) > _TRACEBACK_LIMIT:
        text = text[: _TRACEBACK_LIMIT // 2] + "\n…\n" + text[-_TRACEBACK_LIMIT // 2 :]
    return ErrorDetail(type=name, message=message[:4000], phase=phase, traceback=text)
