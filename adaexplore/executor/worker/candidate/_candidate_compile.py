"""The compile pass of a candidate's run: each of its kernels compiled as forward launches it, without running it
(on `compile`, and on `cuda` before the GPU is taken), with what the kernels cost, the shared memory they take,
and what the forward does at the task's full sizes. Also what was compiled for sm_90 without a GPU."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import torch

from adaexplore.domain import AuditFlag, Backend, Status
from adaexplore.executor.wire._protocol import Phase, RunCandidate, TargetCompiles
from adaexplore.executor.worker.candidate._candidate_base import RunnerBase, cloned
from adaexplore.executor.worker.confine._errors import classify
from adaexplore.executor.worker.confine._guard import Guard
from adaexplore.executor.worker.cost._full_size import full_size_pass
from adaexplore.executor.worker.coverage._coverage import CoverageRecorder
from adaexplore.roofline import ForwardWork

__all__ = ["CompilePass"]


class CompilePass(RunnerBase):
    """The compile pass, and the record of what was compiled for sm_90."""

    def _target_compiles(self, what: str) -> TargetCompiles | None:
        """What was compiled for sm_90 without a GPU, and at which sizes; also said in an info flag."""
        counts = dict(sorted(self.tracker.target_compiles.items()))
        if not counts:
            return None
        small = self.job.sizes == "small" and bool(self.job.small_sizes)
        compiles = TargetCompiles(
            target=self.tracker.target,
            sizes="small" if small else "full",
            size_values=dict(self.job.small_sizes or {}) if small else {},
            specializations=counts,
        )
        at = (
            "at the small sizes (" + ", ".join(f"{k}={v}" for k, v in compiles.size_values.items()) + ")"
            if small
            else "at the task's sizes"
        )
        kernels = ", ".join(f"{name} ({n} specialization{'s' if n != 1 else ''})" for name, n in counts.items())
        self.state.flags.append(
            AuditFlag(
                code="compiled_for_sm90",
                severity="info",
                message=f"{what} compiled for {self.tracker.target.replace('cuda:', 'sm_')} {at}: {kernels}",
            )
        )
        return compiles

    def _compile_pass(self, model: torch.nn.Module, inputs: list[Any], command: RunCandidate, guard: Guard) -> float:
        self.channel.send(Phase(phase="compiling"))
        started = time.perf_counter()
        self.tracker.compile_only = True
        self.tracker.shared_memory_limit = command.shared_memory_limit
        self.tracker.sizes = self.job.sizes if self.job.small_sizes else "full"
        full = self.tracker.sizes == "full"
        steps: list[Any] = []
        stopped = ""
        try:
            with self._numerics(), torch.no_grad(), self._recording(full) as steps:
                _, launched = self.tracker.count(lambda: model(*cloned(inputs)))
            if self.backend is Backend.compile and not launched:
                self.state.flags.append(
                    AuditFlag(
                        code="no_triton_launch",
                        severity="warn",
                        message="No Triton kernel of the candidate was launched in forward (compile check).",
                    )
                )
        except BaseException as exc:
            status = classify(exc)
            if status in (Status.compile_error, Status.infra_error):
                self._fail(status, "", exc, "compile")
            if self.backend is Backend.compile:
                stopped = f"host code raised {type(exc).__name__} in the compile check"
                # Kernel outputs are never written here, so host code that reads them may fail; the
                # interpreter or the GPU judges that code.
                self.state.flags.append(
                    AuditFlag(
                        code="compile_check_incomplete",
                        severity="info",
                        message=f"host code raised {type(exc).__name__} while compiling (kernel outputs are not "
                        "computed in this check); kernels launched after that point were not compiled",
                    )
                )
        finally:
            self.tracker.compile_only = self.backend is Backend.compile
        if full:
            self.work = ForwardWork(steps=steps, complete=not stopped, note=stopped)
        if self.backend is Backend.compile and self.tracker.sizes == "small":
            self._compile_at_full_size(type(model))
        self._refuse_launches()
        for name, used in sorted(self.tracker.shared_memory.items()):
            if used > command.shared_memory_limit:
                self._fail(
                    Status.compile_error,
                    f"OutOfResources: out of resource: shared memory, Required: {used}, Hardware limit: "
                    f"{command.shared_memory_limit} (kernel {name}). Reducing block sizes or num_stages "
                    "may help.",
                )
        self._check(guard, "compilation")
        return time.perf_counter() - started

    @contextlib.contextmanager
    def _recording(self, record: bool) -> Iterator[list[Any]]:
        """What the forward does, recorded where this pass runs at the task's full sizes (`record`)."""
        if not record:
            yield []
            return
        with self.tracker.recording_work() as steps:
            yield steps

    def _compile_at_full_size(self, model_cls: type[torch.nn.Module]) -> None:
        """The same kernels compiled at the task's full sizes, on shape-only tensors (see `_full_size`)."""
        cast = getattr(torch, self.job.cast_floats_to) if self.job.cast_floats_to else None
        recorder = CoverageRecorder(self.tracker.shared_memory_limit)
        try:
            stopped, steps, self.coverage = full_size_pass(self.tracker, model_cls, self.job.task_path, cast, recorder)
        except BaseException as exc:
            self._fail(classify(exc), "at the task's full sizes (compiled on shape-only tensors)", exc, "compile")
        self.work = ForwardWork(steps=steps, complete=not stopped, note=stopped)
        if stopped:
            self.state.flags.append(AuditFlag(code="full_size_compile_incomplete", severity="info", message=stopped))
