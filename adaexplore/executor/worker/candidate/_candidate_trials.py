"""The trials of a candidate's run: forward on each trial's inputs, its Triton launches counted, and its outputs
checked before they are handed to the judge: plain dense tensors on the inputs' device, no more elements than the
reference's, not an input or a view of one, and the inputs left as they were (unless the reference does either).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, cast

import torch

from adaexplore.domain import AuditFlag, Status
from adaexplore.executor.wire._protocol import Phase, Proceed, RunCandidate, TensorFile
from adaexplore.executor.worker.candidate._candidate_base import RunnerBase, cloned
from adaexplore.executor.worker.confine._errors import classify
from adaexplore.executor.worker.confine._faults import DisguisedOutput
from adaexplore.executor.worker.confine._guard import Guard
from adaexplore.executor.worker.cpu import _fast_math as fast_math
from adaexplore.executor.worker.task._taskrun import (
    ShadowedTensor,
    flatten_output,
    own_attributes,
    seed_forward,
    tensors_in,
)
from adaexplore.executor.worker.timing._kept import oversized

__all__ = ["Trials"]


# Methods are called through the class, never through the tensor: a tensor's own attribute would shadow them.
def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    as_bytes = [torch.Tensor.view(torch.Tensor.contiguous(t), torch.uint8) for t in (a, b)]
    return torch.equal(*as_bytes)


def _overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    sa, sb = torch.Tensor.untyped_storage(a), torch.Tensor.untyped_storage(b)
    if sa.nbytes() == 0 or sb.nbytes() == 0 or a.device != b.device:
        return False
    a0, b0 = sa.data_ptr(), sb.data_ptr()
    return a0 < b0 + sb.nbytes() and b0 < a0 + sa.nbytes()


class Trials(RunnerBase):
    """The trials, and the checks of each trial's outputs."""

    def _trials(
        self,
        model: torch.nn.Module,
        trial_inputs: list[list[Any]],
        trial_seeds: list[int],
        command: RunCandidate,
        proceed: Proceed,
        guard: Guard,
        exchange: Path,
    ) -> tuple[list[list[TensorFile]], list[str]]:
        outputs: list[list[TensorFile]] = []
        first_launches: list[str] = []
        for index, inputs in enumerate(trial_inputs):
            self.channel.send(Phase(phase="trial", done=index, total=len(trial_inputs)))
            args, pristine = cloned(inputs), cloned(inputs)
            try:
                seed_forward(trial_seeds[index])  # as the judge seeds the reference's forward of this trial
                with self._numerics(), torch.no_grad():
                    # the default binds this trial's args; mypy infers no lambda with one against Callable[[], Any]
                    out, launches = self.tracker.count(cast(Callable[[], Any], lambda args=args: model(*args)))
                self._sync()
            except BaseException as exc:
                self._refuse_launches()
                self._fail(classify(exc), f"forward raised in trial {index + 1}", exc, f"trial {index + 1}")
            self._refuse_launches()
            self._check(guard, f"trial {index + 1}")
            if index == 0:
                first_launches = launches
                if not launches:
                    severity: Literal["reject", "warn"] = "reject" if command.require_triton else "warn"
                    self.state.flags.append(
                        AuditFlag(
                            code="no_triton_launch",
                            severity=severity,
                            message="You cannot leave the work to PyTorch alone: no Triton kernel defined in the "
                            f"candidate ran during forward{self._empty_note()}. Launch your @triton.jit kernels "
                            "in forward.",
                        )
                    )
            elif first_launches and not launches and command.require_triton:
                # kernels in the first call only, PyTorch after it (work done once, then reused or skipped)
                self.state.flags.append(
                    AuditFlag(
                        code="no_triton_launch",
                        severity="reject",
                        message=f"You cannot leave the work to PyTorch alone: Triton kernels ran in trial 1 but "
                        f"none in trial {index + 1}. Launch your @triton.jit kernels in every forward.",
                    )
                )
            tensors = self._check_outputs(out, args, pristine, proceed, index)
            self._compile_failed()
            outputs.append(self._hand_over(tensors, index, exchange, f"trial{index}"))
            # this call's copies go before the next call's are made: one trial's inputs are held at a time
            del out, tensors, args, pristine
        if fast_math.USED:
            names = ", ".join(f"libdevice.{name}" for name in sorted(fast_math.USED))
            self.state.flags.append(
                AuditFlag(
                    code="approximate_math",
                    severity="info",
                    message=f"{names} computed as a GPU approximates them (float32 arithmetic as the GPU does it, "
                    "and an error of the documented size for each approximate instruction), not exactly: outputs "
                    "that depend on them are judged with the GPU's error",
                )
            )
        return outputs, first_launches

    def _check_size(self, tensors: list[torch.Tensor], proceed: Proceed, where: str) -> None:
        """Before an output is copied or written: it holds no more elements than the reference's."""
        refused = oversized(tensors, proceed.max_output_elements, where)
        if refused:
            self._fail(Status.mismatch, refused)

    def _check_outputs(
        self, out: Any, args: list[Any], pristine: list[Any], proceed: Proceed, index: int
    ) -> list[torch.Tensor]:
        for k, a in enumerate(args):
            names = [name for t in tensors_in(a) for name in own_attributes(t)]
            if names:
                self._fail(
                    Status.rejected,
                    f"You cannot set attributes on the inputs: input {k} carries {', '.join(names[:5])} after "
                    f"forward in trial {index + 1}.",
                )
        try:
            tensors = flatten_output(out)
        except (ShadowedTensor, DisguisedOutput) as exc:
            self._fail(Status.rejected, str(exc))
        except TypeError as exc:
            self._fail(Status.mismatch, str(exc))
        self._check_size(tensors, proceed, f"trial {index + 1}")
        for j, t in enumerate(tensors):
            if type(t) is not torch.Tensor:
                self._fail(Status.mismatch, f"output {j} is a {type(t).__name__}, not a plain torch.Tensor")
            if t.device != self.device:
                self._fail(
                    Status.mismatch,
                    f"output {j} is on {t.device}; the inputs are on {self.device}, and the output must be there too",
                )
            if not proceed.allow_aliasing and any(_overlaps(t, a) for a in tensors_in(args)):
                self.state.flags.append(
                    AuditFlag(
                        code="output_aliases_input",
                        severity="reject",
                        message="You cannot return an input (or a view of one) as the output; write a new tensor.",
                    )
                )
        if not proceed.allow_input_mutation:
            for k, (a, p) in enumerate(zip(args, pristine, strict=True)):
                now, before = tensors_in(a), tensors_in(p)
                # a list argument that lost or gained tensors was modified too
                if len(now) != len(before) or any(not _same_bits(x, y) for x, y in zip(now, before, strict=True)):
                    self.state.flags.append(
                        AuditFlag(
                            code="input_modified",
                            severity="reject",
                            message=f"You cannot modify the inputs: input {k} changed during forward in trial "
                            f"{index + 1}. Write results to new tensors.",
                        )
                    )
                    break
        rejects = [f for f in self.state.flags if f.severity == "reject"]
        if rejects:
            self._fail(Status.rejected, rejects[0].message)
        return tensors
