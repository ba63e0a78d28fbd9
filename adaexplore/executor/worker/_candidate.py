"""One candidate's life in a fresh worker: load, compile, run the trials, time, report.

The candidate runs here, beside the measuring code; the references do not. Outputs leave as raw files
for the judge to compare, so no result is decided in a process the candidate could have altered.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from adaexplore.domain import AuditFlag, Backend, Status
from adaexplore.executor.policy import ALLOWED_IMPORTS, check_policy, resolve_dotted
from adaexplore.executor.wire._protocol import (
    Compiled,
    Done,
    Failed,
    Inputs,
    Phase,
    Proceed,
    RunCandidate,
    TargetCompiles,
    TaskFailed,
    TensorFile,
    TimeCandidate,
    Timed,
    TrialsDone,
)
from adaexplore.executor.wire._side import SideSocket
from adaexplore.executor.worker import _fast_math as fast_math
from adaexplore.executor.worker._channel import Channel
from adaexplore.executor.worker._cuda_on_cpu import cuda_on_cpu
from adaexplore.executor.worker._errors import (
    classify,
    describe,
    evaluator_fault,
    fault_message,
    kept_by_candidate,
)
from adaexplore.executor.worker._exchange import write_tensor
from adaexplore.executor.worker._faults import CANDIDATE_MODULE, DisguisedOutput, OutputTooLarge, TaskFault
from adaexplore.executor.worker._full_size import full_size_pass
from adaexplore.executor.worker._guard import Guard
from adaexplore.executor.worker._launches import LaunchTracker
from adaexplore.executor.worker._perturb import has_integer_inputs
from adaexplore.executor.worker._shared import OutputSink, copy_inputs
from adaexplore.executor.worker._static_cost import capture_ptxas_logs
from adaexplore.executor.worker._taskrun import (
    ShadowedTensor,
    build_model,
    candidate_builtins,
    clone_args,
    flatten_output,
    import_file,
    load_task_module,
    make_args,
    own_attributes,
    resolve_seeds,
    tensors_in,
)
from adaexplore.executor.worker._timing import Timer, caught, oversized, summarize
from adaexplore.roofline import ForwardWork

__all__ = ["CandidateRunner"]


class _Stop(Exception):
    """Ends the run; the reason has been sent already."""


@dataclass
class _State:
    flags: list[AuditFlag] = field(default_factory=list)


def _accepts(cls: type, args: list[Any]) -> bool:
    try:
        inspect.signature(cls).bind(*args)
    except TypeError:
        return False
    except ValueError:  # no signature to read: say nothing about it
        return True
    return True


def _clone(args: list[Any]) -> list[Any]:
    return clone_args(list(args))


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


class _TimedCallRefused(Exception):
    """A timed call broke a rule the trials hold every call to (raised inside the timing loop, which stops)."""


def _tensor_subclasses_of(module: str) -> list[str]:
    """Classes defined in `module` that derive from torch.Tensor, however the module named the base (an alias,
    torch.nn.Buffer, a class made inside a function)."""
    found: list[str] = []
    seen: set[type] = set()
    pending: list[type] = [torch.Tensor]
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


class CandidateRunner:
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
        self.state = _State()
        self.runtime_guard = True
        self.guard: Guard | None = None
        self.job: Any = None
        # what one forward does at the task's full sizes (the compile pass's record; see _work_record)
        self.work: ForwardWork | None = None

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

    def _fail(self, status: Status, message: str, exc: BaseException | None = None, phase: str = "") -> None:
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
        raise _Stop

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
        subclasses = _tensor_subclasses_of(CANDIDATE_MODULE)
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

    def _check_names(self, path: Path) -> None:
        """The half of the policy that needs the real modules, before the candidate is imported: a name of an
        allowed import is checked as what it names (torch.nn.quantized.modules.conv.ops is torch.ops)."""
        source = path.read_text(encoding="utf-8")
        violations = check_policy(ast.parse(source), resolve=resolve_dotted, source=source)
        if violations:
            self.state.flags.extend(
                AuditFlag(code=v.code, severity="reject", message=f"line {v.line}: {v.message}") for v in violations
            )
            first = violations[0]
            self._fail(Status.rejected, f"line {first.line}: {first.message}")

    def _wait(self, *kinds: type) -> Any:
        command = self.channel.receive()
        if command is None or not isinstance(command, kinds):
            raise _Stop
        return command

    # the run -----------------------------------------------------------------------------------
    def run(self, command: RunCandidate) -> None:
        job = command.job
        exchange = Path(job.exchange_dir)
        self.runtime_guard = job.runtime_guard
        self.replacements = {
            str(exchange / "candidate.py"): "candidate.py",
            job.task_path: "task.py",
            str(exchange): ".",
        }
        torch.backends.cuda.matmul.allow_tf32 = job.allow_tf32_matmul
        torch.backends.cudnn.allow_tf32 = job.allow_tf32_cudnn
        cast = getattr(torch, job.cast_floats_to) if job.cast_floats_to else None
        try:
            self._run(command, exchange, cast)
        except _Stop:
            return
        except TaskFault as exc:
            self.channel.send(TaskFailed(message=str(exc)))

    def _run(self, command: RunCandidate, exchange: Path, cast: torch.dtype | None) -> None:
        job = command.job
        started = time.perf_counter()
        if job.one_config and self.backend is Backend.interpret:
            from adaexplore.executor.worker._interpret_shim import first_config_only

            first_config_only()  # before the guard notes Triton's methods as they are
        if self.backend is Backend.interpret:
            from adaexplore.executor.worker._compile_only import install_mirrors

            install_mirrors()  # (its launches are compiled for the GPU too) also before the guard
        self.channel.send(Phase(phase="loading"))
        task = load_task_module(job.task_path, job.small_sizes if job.sizes == "small" else None)
        init_seed, trial_seeds, timing_seed = resolve_seeds(job)
        on_device = job.generate_on_device
        init_args = make_args(task, "get_init_inputs", init_seed, self.device, cast, on_device=on_device)
        trial_inputs: list[list[Any]] = []
        if not command.shared_inputs:
            trial_inputs = [
                make_args(task, "get_inputs", seed, self.device, cast, on_device=on_device) for seed in trial_seeds
            ]
        guard = Guard()
        self.guard, self.job = guard, job
        if job.enforce_policy:
            self._check_names(exchange / "candidate.py")

        try:
            module = import_file(
                CANDIDATE_MODULE,
                exchange / "candidate.py",
                builtins=candidate_builtins(ALLOWED_IMPORTS) if job.enforce_policy else None,
            )
        except BaseException as exc:
            if self.tracker.refusals:
                self._fail(Status.rejected, self.tracker.refusals[0])
            status = classify(exc)
            self._fail(
                Status.compile_error if status is Status.runtime_error else status,
                "the candidate module failed to import",
                exc,
                "import",
            )
        self._check(guard, "import")
        model_cls = getattr(module, "ModelNew", None)
        if not (isinstance(model_cls, type) and issubclass(model_cls, torch.nn.Module)):
            self._fail(
                Status.compile_error,
                "the candidate defines no ModelNew class; define "
                "`class ModelNew(nn.Module)` taking the same constructor arguments as Model",
            )
        try:
            with self._numerics():
                model = build_model(model_cls, init_args, init_seed, self.device, cast, on_device=on_device)
        except BaseException as exc:
            where = "ModelNew(*get_init_inputs()) raised"
            if not _accepts(model_cls, init_args):  # the call itself did not fit
                params = ", ".join(list(inspect.signature(task.Model.__init__).parameters)[1:])
                where += f"; ModelNew must accept the same arguments as Model({params})"
            self._fail(classify(exc), where, exc, "construction")
        self._check(guard, "construction")
        if command.shared_inputs:
            trial_inputs = self._shared_inputs(task, trial_seeds, cast, on_device)
        load_s = time.perf_counter() - started

        compile_s = 0.0
        if self.backend is Backend.compile or command.compile_pass:
            compile_s = self._compile_pass(model, trial_inputs[0], command, guard)
            if self.device.type == "cuda":
                # The pass ran the forward's PyTorch operations too, at full size, and the caching allocator
                # keeps what they took (a cuDNN convolution's workspace can be tens of GiB): give it back before
                # the judge computes its references and lays out the outputs on the same GPU.
                torch.cuda.empty_cache()
        self.channel.send(
            Compiled(
                kernels=sorted(self.tracker.kernels),
                shared_memory=self.tracker.shared_memory,
                static_cost=self.tracker.costs,
                flags=self.state.flags,
                load_s=load_s,
                compile_s=compile_s,
                target_compiles=self._target_compiles("the kernels the compile check launched were")
                if self.backend is Backend.compile
                else None,
                work=self.work,
            )
        )
        if self.backend is Backend.compile:
            self.channel.send(Done())
            return

        proceed: Proceed = self._wait(Proceed)
        if proceed.outputs is not None:
            self.sink = OutputSink(self._map(proceed.outputs.nbytes, "outputs", writable=True), proceed.outputs)
        trials_started = time.perf_counter()
        outputs, launches = self._trials(model, trial_inputs, command, proceed, guard, exchange)
        compiles = (
            self._target_compiles("every launch the interpreter ran was also")
            if self.backend is Backend.interpret
            else None
        )
        self.channel.send(
            TrialsDone(
                outputs=outputs,
                triton_launches=len(launches),
                triton_kernels=sorted(set(launches)),
                flags=self.state.flags,
                trial_s=time.perf_counter() - trials_started,
                target_compiles=compiles,
            )
        )
        timing: TimeCandidate = self._wait(TimeCandidate)
        self._time(
            model,
            task,
            timing_seed,
            cast,
            on_device,
            timing,
            guard,
            exchange,
            proceed.max_output_elements,
        )

    def _map(self, nbytes: int, what: str, *, writable: bool) -> Any:
        """The judge's buffer of `what` for this job, whose handle comes on the side socket."""
        from adaexplore.executor.worker._device_memory import import_buffer

        if self.side is None:
            raise RuntimeError("the evaluator shared device memory with a worker that has no side socket")
        fd = self.side.receive_fd(f"{self.job.job_id}:{what}")
        return import_buffer(fd, nbytes, self.device.index or 0, writable=writable)

    def _shared_inputs(self, task: Any, seeds: list[int], cast: torch.dtype | None, on_device: bool) -> list[Any]:
        """The trial inputs: copies of the judge's (read-only in its buffer), or drawn here when it shares none."""
        inputs: Inputs = self._wait(Inputs)
        if inputs.shared is None:
            return [make_args(task, "get_inputs", seed, self.device, cast, on_device=on_device) for seed in seeds]
        buffer = self._map(inputs.shared.nbytes, "inputs", writable=False)
        try:
            trials, self.timing_base = copy_inputs(buffer, inputs.shared)
        finally:
            buffer.close()
        return trials

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
        capture_ptxas_logs()
        self.tracker.shared_memory_limit = command.shared_memory_limit
        self.tracker.sizes = self.job.sizes if self.job.small_sizes else "full"
        full = self.tracker.sizes == "full"
        steps: list[Any] = []
        stopped = ""
        try:
            with self._numerics(), torch.no_grad(), self._recording(full) as steps:
                _, launched = self.tracker.count(lambda: model(*_clone(inputs)))
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
        try:
            stopped, steps = full_size_pass(self.tracker, model_cls, self.job.task_path, cast)
        except BaseException as exc:
            self._fail(classify(exc), "at the task's full sizes (compiled on shape-only tensors)", exc, "compile")
        self.work = ForwardWork(steps=steps, complete=not stopped, note=stopped)
        if stopped:
            self.state.flags.append(AuditFlag(code="full_size_compile_incomplete", severity="info", message=stopped))

    def _trials(
        self,
        model: torch.nn.Module,
        trial_inputs: list[list[Any]],
        command: RunCandidate,
        proceed: Proceed,
        guard: Guard,
        exchange: Path,
    ) -> tuple[list[list[TensorFile]], list[str]]:
        outputs: list[list[TensorFile]] = []
        first_launches: list[str] = []
        for index, inputs in enumerate(trial_inputs):
            self.channel.send(Phase(phase="trial", done=index, total=len(trial_inputs)))
            args, pristine = _clone(inputs), _clone(inputs)
            try:
                with self._numerics(), torch.no_grad():
                    out, launches = self.tracker.count(lambda args=args: model(*args))
                self._sync()
            except BaseException as exc:
                self._refuse_launches()
                self._fail(classify(exc), f"forward raised in trial {index + 1}", exc, f"trial {index + 1}")
            self._refuse_launches()
            self._check(guard, f"trial {index + 1}")
            if index == 0:
                first_launches = launches
                if not launches:
                    severity = "reject" if command.require_triton else "warn"
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
            del out, tensors
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

    def _recheck_count(self, timing: TimeCandidate, max_output_elements: int | None) -> int:
        """The timed calls to keep for the judge: as many as asked, within the sets of the device exchange (which
        the judge sized to the bytes allowed) or, for outputs written as files, within the bytes allowed (outputs
        of 4-byte elements); fewer is said in a flag with what it still catches."""
        want = timing.recheck_calls
        if self.sink is not None:
            want = min(want, self.sink.sets)
        elif max_output_elements:
            want = min(want, max(1, timing.recheck_bytes // (4 * max_output_elements)))
        if want < timing.recheck_calls:
            self.state.flags.append(
                AuditFlag(
                    code="few_rechecks",
                    severity="info",
                    message=f"the outputs of {want} timed calls were checked again, not {timing.recheck_calls}: "
                    f"{timing.recheck_calls} would not fit in {timing.recheck_bytes >> 20} MiB; a kernel wrong in "
                    f"one call in ten is caught with probability {caught(want):.2f}",
                )
            )
        return want

    def _hand_over(self, tensors: list[torch.Tensor], index: int, exchange: Path, name: str) -> list[TensorFile]:
        """Outputs for the judge: into its device buffer where it gave one with room for call `index`, else
        written as raw files."""
        if self.sink is not None and index < self.sink.sets:
            return self.sink.put(index, tensors)
        return [write_tensor(t, exchange, f"{name}_out{j}.bin") for j, t in enumerate(tensors)]

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

    def _time(
        self,
        model: torch.nn.Module,
        task: Any,
        timing_seed: int,
        cast: torch.dtype | None,
        on_device: bool,
        timing: TimeCandidate,
        guard: Guard,
        exchange: Path,
        max_output_elements: int | None,
    ) -> None:
        self.channel.send(Phase(phase="timing"))
        calls = 0

        def call(args: list[Any]) -> Any:
            nonlocal calls
            calls += 1
            before = len(self.tracker.launches)  # the list count() fills while the timing runs
            out = model(*args)
            if self.tracker.refusals:
                raise _TimedCallRefused(self.tracker.refusals[0])
            if len(self.tracker.launches) == before:
                # each call on its own: outputs computed in other calls (token launches in a few, PyTorch in
                # the rest) are not this call's work
                raise _TimedCallRefused(
                    f"You cannot skip the Triton kernels in timed calls: timed call {calls} launched none of "
                    f"the candidate's kernels{self._empty_note()}. Every call must compute its outputs with a "
                    "Triton kernel."
                )
            # The types first, before anything iterates the result: a subclass of tuple would run code of its own,
            # inside the timed region or after it. Inside it (the timer stops after this returns), the outputs
            # are plain tensors that exist.
            kind = type(out)
            plain = list(out) if kind is tuple or kind is list else [out]
            if not all(type(t) is torch.Tensor for t in plain):
                kinds = sorted({type(t).__name__ for t in plain} if kind is tuple or kind is list else {kind.__name__})
                raise _TimedCallRefused(
                    "You cannot return anything but plain torch.Tensor objects, alone or in a plain tuple or list, "
                    f"from a timed call (timed call {calls} returned {', '.join(kinds)})."
                )
            return out

        try:
            base = self.timing_base
            if base is None:
                base = make_args(task, "get_inputs", timing_seed, self.device, cast, on_device=on_device)
            # on the timed calls' own values: a candidate that knows the trials' inputs cannot tell this call apart
            with self._numerics(), torch.no_grad():
                share = self.tracker.triton_share(lambda: model(*_clone(base)))
            if self.tracker.refusals:
                raise _TimedCallRefused(self.tracker.refusals[0])
            redraw = None
            if has_integer_inputs(base):

                def redraw(seed: int) -> list[Any]:
                    return make_args(task, "get_inputs", seed, self.device, cast, on_device=on_device)

            with self._numerics():
                # counting, so that each call can see its own launches (call() checks them)
                measured, _ = self.tracker.count(
                    lambda: Timer(self.device).measure(
                        call,
                        base,
                        timing.timing,
                        budget_ms=timing.budget_ms,
                        min_reps=timing.min_reps,
                        max_reps=timing.max_reps,
                        recheck=self._recheck_count(timing, max_output_elements),
                        keep_limit=max_output_elements,
                        redraw=redraw,
                    )
                )
            self._sync()
        except OutputTooLarge as exc:
            self._fail(Status.mismatch, str(exc))
        except (ShadowedTensor, DisguisedOutput, _TimedCallRefused) as exc:
            self._fail(Status.rejected, str(exc))
        except BaseException as exc:
            self._fail(classify(exc), "forward raised while being timed", exc, "timing")
        self._check(guard, "timing")
        if measured.changed_input is not None:
            self._fail(
                Status.rejected,
                f"You cannot modify the inputs: input {measured.changed_input} changed in a timed call (every "
                "call must leave its inputs as it found them)",
            )
        rechecks = [
            self._hand_over(tensors, k, exchange, f"recheck{k}") for k, (_, tensors) in enumerate(measured.kept)
        ]
        self.channel.send(
            Timed(
                stats=summarize(measured.times_ms, timing.timing, measured.warmup_n),
                method=timing.timing.method,
                host_bound_calls=measured.host_bound,
                unseen_ms=measured.unseen_ms,
                rechecks=rechecks,
                recheck_patterns=[pattern for pattern, _ in measured.kept],
                triton_time_share=share,
                flags=self.state.flags,
            )
        )
