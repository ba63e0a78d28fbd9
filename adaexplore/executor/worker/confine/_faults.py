"""Every exception class a worker raises to say what went wrong, and whose fault it was: a leaf module that
imports nothing of the worker, so that the attribution in `_errors` and the modules that raise these classes
(`_interpret_shim` and its `_interpret_*` modules, `_launches`, `_kernel_sources`, `_kernel_rules`, `_importing`,
`_taskrun`, `_timing`, `_device_memory`) never import each other for them.

- `CandidateFault` is mixed into the classes that the evaluator's own checks raise about the candidate's code;
- `MadeHere` is mixed into the classes that say a failure is the evaluator's (`EvaluatorFault`) or its
  backend's (`BackendLimitation`), which count as such only as they unwind the stack they were made in;
- the rest are the task's (`TaskFault`), the candidate's outputs' (`OutputTooLarge`), or the machine's
  (`DeviceMemoryError`).
"""

from __future__ import annotations

import sys
import weakref
from types import CodeType, FrameType

__all__ = [
    "CANDIDATE_MODULE",
    "BackendLimitation",
    "CandidateFault",
    "DeviceAssertFailed",
    "DeviceMemoryError",
    "DisguisedOutput",
    "EvaluatorFault",
    "FakeTensorArgument",
    "HostCallOfKernelCode",
    "KernelOOBError",
    "MadeHere",
    "OutputNotTensors",
    "OutputTooLarge",
    "PointerFromInteger",
    "ReachRefused",
    "Refused",
    "SourceChanged",
    "TargetCompileFailed",
    "TaskFault",
    "made_stack",
]

# the name the candidate's module is imported under
CANDIDATE_MODULE = "adaexplore_candidate"

# Per exception the evaluator made: the call stack it was made in, innermost frame first (a frame's id with its
# code, which the record keeps alive, so that a frame made later at the same address is told apart). Keyed by
# object: `MadeHere`, which records them, is a mixin and no exception to mypy.
_MADE_HERE: weakref.WeakKeyDictionary[object, tuple[tuple[int, CodeType], ...]] = weakref.WeakKeyDictionary()


def made_stack(exc: BaseException) -> tuple[tuple[int, CodeType], ...] | None:
    """The call stack one of the evaluator's modules made `exc` in, if one did (see `MadeHere`)."""
    return _MADE_HERE.get(exc)


class CandidateFault(Exception):
    """Mixed into the exceptions the evaluator's checks raise about the candidate's code (an out-of-bounds
    access, a refused construct): raised in the evaluator's frames, but the candidate's fault."""


class ReachRefused(CandidateFault, AttributeError):
    """The candidate's code reached, at run time, an attribute the rules refuse (a computed private name, a
    private attribute of an object that is not its own through a method's first parameter)."""


class OutputNotTensors(CandidateFault, TypeError):
    """A forward returned something other than tensors (None, a number, an object of its own)."""


class DisguisedOutput(CandidateFault, TypeError):
    """A forward returned a subclass of a tensor, a tuple or a list: code of its own would answer the checks."""


class HostCallOfKernelCode(CandidateFault, RuntimeError):
    """Host code called a `@triton.jit` function (on a GPU, Triton refuses it the same way)."""

    shown_as = "RuntimeError"

    def __init__(self, name: str) -> None:
        super().__init__(
            f"Cannot call @triton.jit'd outside of the scope of a kernel ({name} was called from host code)"
        )


class MadeHere:
    """Mixed into the exceptions that say a failure is the evaluator's (`EvaluatorFault`) or its backend's
    (`BackendLimitation`): an instance counts as such only if one of the evaluator's modules made it, and only as
    it unwinds the call stack it was made in. Each records that stack as it is made; the candidate may build one
    of these classes (it is not recorded) or catch one of ours and raise it again later (its traceback then
    leaves the recorded stack): both are the candidate's own exceptions."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        frame: FrameType | None = sys._getframe(1)
        while frame is not None and frame.f_code.co_name == "__init__" and frame.f_locals.get("self") is self:
            frame = frame.f_back  # a subclass's own __init__
        if frame is None or not frame.f_globals.get("__name__", "").startswith("adaexplore.executor"):
            return
        stack = []
        while frame is not None:
            stack.append((id(frame), frame.f_code))
            frame = frame.f_back
        _MADE_HERE[self] = tuple(stack)


class EvaluatorFault(MadeHere, RuntimeError):
    """The evaluator's own code failed where the candidate did nothing wrong (a stand-in computing wrongly)."""


class KernelOOBError(CandidateFault, IndexError):
    """A kernel touched memory outside every tensor it was given."""


class FakeTensorArgument(CandidateFault, TypeError):
    """A kernel argument that the interpreter would take for a tensor is none."""


class DeviceAssertFailed(CandidateFault, AssertionError):
    """A `tl.device_assert` in the kernel failed."""

    # the name failures carry (and the skill memory's signatures hold) since before this class existed
    shown_as = "AssertionError"


class BackendLimitation(MadeHere, NotImplementedError):
    """The interpreter cannot run this construct; the GPU can. Not the candidate's fault (where the evaluator
    raised it, and the candidate did not keep it to raise later: see `MadeHere`)."""


class PointerFromInteger(CandidateFault, TypeError):
    """A kernel turned an integer into a pointer: an address of the worker's memory, not of its arguments."""


class Refused(CandidateFault, RuntimeError):
    """A launch or a kernel the tracker refuses (its message is in the tracker's refusals)."""


class SourceChanged(Refused):
    """The source Triton was about to compile or run for a kernel is not the one it was made from."""


class TargetCompileFailed(RuntimeError):
    """A launch the interpreter ran does not compile for the GPU target: the candidate's compile error, unless
    its cause is a failure of the evaluator's own code (see `_errors.evaluator_fault`)."""


class TaskFault(Exception):
    """The task's own code raised, or does not provide what a task must."""


class OutputTooLarge(ValueError):
    """A timed call's outputs hold more elements than the reference's: not copied for the recheck."""


class DeviceMemoryError(RuntimeError):
    """A CUDA driver call on shared memory failed (adaexplore's fault, or the machine's, never the candidate's)."""

    @property
    def out_of_memory(self) -> bool:
        """Whether the driver said the device's memory ran out (CUDA_ERROR_OUT_OF_MEMORY)."""
        return "OUT_OF_MEMORY" in str(self)
