"""What every phase of a candidate's run shares (`_candidate` runs them): the runner's state, how the run fails
(`_fail` sends the failure and stops the run) and the checks after each step: the guard's, tensor subclasses,
Triton's launch hooks, the launches the tracker refused and the kernels that did not compile for sm_90.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import torch

from adaexplore.domain import AuditFlag, Backend, ErrorDetail, Status
from adaexplore.executor.wire._protocol import Coverage, Failed, TensorFile
from adaexplore.executor.wire._side import SideSocket
from adaexplore.executor.worker.candidate._launches import LaunchTracker
from adaexplore.executor.worker.confine._errors import describe, evaluator_fault, fault_message, kept_by_candidate
from adaexplore.executor.worker.confine._faults import CANDIDATE_MODULE
from adaexplore.executor.worker.confine._guard import Guard
from adaexplore.executor.worker.cpu._cuda_on_cpu import cuda_on_cpu
from adaexplore.executor.worker.exchange._channel import Channel
from adaexplore.executor.worker.exchange._exchange import write_tensor
from adaexplore.executor.worker.exchange._shared import OutputSink
from adaexplore.executor.worker.task._taskrun import clone_args
from adaexplore.executor.worker.timing._kept import Sampled
from adaexplore.roofline import ForwardWork

__all__ = ["RunnerBase", "State", "Stop", "cloned", "tensor_subclasses_of"]


class Stop(Exception):
    """Ends the run; the reason has been sent already."""


@dataclass
class State:
    """What the run found so far."""

    flags: list[AuditFlag] = field(default_factory=list)


def cloned(args: list[Any]) -> list[Any]:
    """A copy of a call's arguments, each tensor in them cloned."""
    return clone_args(list(args))


def tensor_subclasses_of(module: str) -> list[str]:
    """Classes defined in `module` that derive from torch.Tensor, however the module named the base (an alias,
    torch.nn.Buffer, a class made inside a function)."""
    found: list[str] = []
    seen: set[type] = set()
    pending: list[type] = [torch.Tensor]
    sub: type
    while pending:
        cls = pending.pop()
        for sub in type.__subclasses__(cls):
            if sub in seen:
                continue
            seen.add(sub)
            pending.append(sub)
            if sub.__module__ == module:
                found.append(sub.__qualname__)
    return sorted(found)


class RunnerBase:
    """The state of one candidate's run and what its phases share."""

    def __init__(
        self,
        channel: Channel,
        backend: Backend,
        device: torch.device,
        tracker: LaunchTracker,
        side: SideSocket | None = None,
    ) -> None:
        self.channel = channel
        self.side = side
        # the timing seed's inputs, when the judge shared them
        self.timing_base: list[Any] | None = None
        self.sink: OutputSink | None = None
        self.backend = backend
        self.device = device
        self.tracker = tracker
        self.state = State()
        self.runtime_guard = True
        self.guard: Guard | None = None
        self.job: Any = None
        # what one forward does at the task's full sizes (the compile pass's record; see _work_record)
        self.work: ForwardWork | None = None
        # whether the forward at the task's full sizes writes every element of its outputs (see _coverage)
        self.coverage: Coverage | None = None
        # the temporary paths in messages, as the candidate knows them (set by `run`)
        self.replacements: dict[str, str] = {}

    # helpers -----------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _numerics(self) -> Iterator[None]:
        if self.backend is Backend.cuda:
            yield
        else:
            with cuda_on_cpu():
                yield

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def _fail(self, status: Status, message: str, exc: BaseException | None = None, phase: str = "") -> NoReturn:
        if status is not Status.rejected:
            # A rule broken outweighs whatever failed after it: no exception, the evaluator's own included, stands
            # in for a rejection. A compile failure the candidate caught is still one.
            rejects = self._rejects()
            if rejects:
                status, message, exc = Status.rejected, rejects[0], None
            elif self.tracker.compile_failures and status is not Status.compile_error:
                name, constants, cause = self.tracker.compile_failures[0]
                status, exc = Status.compile_error, cause
                message = f"kernel {name} does not compile for sm_90 as the interpreter ran it ({constants})"
        error = describe(exc, phase, self.replacements) if exc is not None else None
        where = evaluator_fault(exc) if exc is not None and status is Status.infra_error else None
        if where is not None and exc is not None:
            message = f"{message}: {fault_message(exc, where)}" if message else fault_message(exc, where)
            for old, new in self.replacements.items():
                message = message.replace(old, new)
        elif error is not None:
            message = f"{message}: {error.message}" if message else error.message
            if exc is not None and status is not Status.infra_error and kept_by_candidate(exc):
                message += (
                    " (your code caught this exception and raised it again later: what it raises is your kernel's "
                    "failure, whatever raised it first)"
                )
        self.channel.send(
            Failed(
                status=status,
                message=message,
                error=error,
                flags=self.state.flags,
                shared_memory=self.tracker.shared_memory,
                static_cost=self.tracker.costs,
            )
        )
        raise Stop

    def _out_of_memory(self, exc: torch.OutOfMemoryError) -> None:
        """The device's memory ran out in adaexplore's own work in this worker, outside the candidate's code:
        the evaluator's failure, or the machine's, never the kernel's (unless a rule it broke outweighs it)."""
        rejects = self._rejects()
        if rejects:
            self.channel.send(Failed(status=Status.rejected, message=rejects[0], flags=self.state.flags))
            return
        counts = ""
        if self.device.type == "cuda":
            free, total = torch.cuda.mem_get_info(self.device)
            held = torch.cuda.memory_allocated(self.device)
            counts = (
                f"; {total / 2**30:.1f} GiB on the GPU, {free / 2**30:.1f} GiB free, "
                f"{held / 2**30:.1f} GiB in this worker"
            )
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        message = (
            "adaexplore ran out of GPU memory in its own work in the candidate's worker (copying the judge's inputs "
            f"for a call, checking or handing over its outputs), not in the candidate's code: {first}{counts}. "
            "Nothing is known of the kernel from this run"
        )
        error = ErrorDetail(type="OutOfMemoryError", message=first, phase="evaluator")
        self.channel.send(Failed(status=Status.infra_error, message=message, error=error, flags=self.state.flags))

    def _rejects(self) -> list[str]:
        """The reasons to reject the candidate found so far: refused launches or kernels, flags, and what the
        guard finds changed now."""
        found = list(self.tracker.refusals)
        found += [f.message for f in self.state.flags if f.severity == "reject"]
        if self.runtime_guard and self.guard is not None:
            try:
                found += [f.message for f in self.guard.check("the failing step") if f.severity == "reject"]
            except Exception:  # a guard that cannot look says nothing; the failure stands
                pass
        return found

    def _check(self, guard: Guard, where: str) -> None:
        if not self.runtime_guard:  # the sandbox tests: only the operating system holds the candidate
            return
        self.state.flags.extend(guard.check(where))
        subclasses = tensor_subclasses_of(CANDIDATE_MODULE)
        if subclasses:
            self.state.flags.append(
                AuditFlag(
                    code="tensor_subclass",
                    severity="reject",
                    message=f"You cannot subclass torch.Tensor (found {', '.join(subclasses[:3])} after {where}); "
                    "return plain tensors computed in forward.",
                )
            )
        if not self.tracker.hooks_intact():
            self.state.flags.append(
                AuditFlag(code="monkey_patch", severity="reject", message="You cannot remove Triton's launch hooks.")
            )
        rejects = [f for f in self.state.flags if f.severity == "reject"]
        if rejects:
            self._fail(Status.rejected, rejects[0].message)

    def _wait(self, *kinds: type) -> Any:
        command = self.channel.receive()
        if command is None or not isinstance(command, kinds):
            raise Stop
        return command

    def _hand_over(
        self, tensors: Sequence[torch.Tensor | Sampled], index: int, exchange: Path, name: str
    ) -> list[TensorFile]:
        """Outputs for the judge: into its device buffer where it gave one with room for call `index` (whole
        outputs only), else written as raw files."""
        whole = [t for t in tensors if isinstance(t, torch.Tensor)]
        if self.sink is not None and index < self.sink.sets and len(whole) == len(tensors):
            return self.sink.put(index, whole)
        files = []
        for j, tensor in enumerate(tensors):
            if isinstance(tensor, Sampled):
                meta = write_tensor(tensor.values, exchange, f"{name}_out{j}.bin")
                update = {"shape": tensor.shape, "sampled": tensor.values.numel(), "sample_seed": tensor.seed}
                files.append(meta.model_copy(update=update))
            else:
                files.append(write_tensor(tensor, exchange, f"{name}_out{j}.bin"))
        return files

    def _refuse_launches(self) -> None:
        """A launch the tracker refused (a kernel on a stream of the candidate's own, a kernel whose source
        changed) rejects the candidate."""
        if self.tracker.refusals:
            self._fail(Status.rejected, self.tracker.refusals[0])

    def _compile_failed(self) -> None:
        """A launch that does not compile for sm_90 fails the candidate, also when it caught the error (after
        the trial's own checks: falling back to PyTorch then is a rejection)."""
        if self.tracker.compile_failures:
            name, constants, cause = self.tracker.compile_failures[0]
            self._fail(
                Status.compile_error,
                f"kernel {name} does not compile for sm_90 as the interpreter ran it ({constants})",
                cause,
                "trial",
            )

    def _empty_note(self) -> str:
        if not self.tracker.empty:
            return ""
        return (
            f" ({len(self.tracker.empty)} launch(es) of {', '.join(sorted(set(self.tracker.empty)))} had a grid of "
            "no programs, which runs nothing)"
        )
