"""One candidate's life in a fresh worker: load, compile, run the trials, time, report.

The candidate runs here, beside the measuring code; the references do not. Outputs leave as raw files
for the judge to compare, so no result is decided in a process the candidate could have altered.

The phases are in `_candidate_compile`, `_candidate_trials` and `_candidate_timing`, what they share in
`_candidate_base`.
"""

from __future__ import annotations

import ast
import inspect
import time
from pathlib import Path
from typing import Any

import torch

from adaexplore.domain import AuditFlag, Backend, Status
from adaexplore.executor.policy import ALLOWED_IMPORTS, TaskGrants, check_policy, resolve_dotted, task_grants
from adaexplore.executor.wire._protocol import (
    COMPILED,
    COMPILING,
    Compiled,
    Done,
    Inputs,
    Phase,
    Proceed,
    RunCandidate,
    TaskFailed,
    TimeCandidate,
    TrialsDone,
)
from adaexplore.executor.worker.candidate._candidate_base import Stop
from adaexplore.executor.worker.candidate._candidate_compile import CompilePass
from adaexplore.executor.worker.candidate._candidate_timing import Timing
from adaexplore.executor.worker.candidate._candidate_trials import Trials
from adaexplore.executor.worker.confine._compile_clock import listen
from adaexplore.executor.worker.confine._errors import classify
from adaexplore.executor.worker.confine._faults import CANDIDATE_MODULE, TaskFault
from adaexplore.executor.worker.confine._guard import Guard
from adaexplore.executor.worker.confine._importing import candidate_builtins, import_file
from adaexplore.executor.worker.cost._static_cost import capture_ptxas_logs
from adaexplore.executor.worker.exchange._shared import OutputSink, SharedInputsView
from adaexplore.executor.worker.task._taskrun import (
    build_model,
    load_task_module,
    make_args,
    resolve_seeds,
    shrink_globals,
)

__all__ = ["CandidateRunner"]


def _accepts(cls: type, args: list[Any]) -> bool:
    try:
        inspect.signature(cls).bind(*args)
    except TypeError:
        return False
    except ValueError:  # no signature to read: say nothing about it
        return True
    return True


class CandidateRunner(CompilePass, Trials, Timing):
    """Runs one candidate: loads the task and the candidate, builds the model, then the phases the judge asks
    for, each reported on the channel."""

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
        # each compile's start and end, so that the evaluator charges the candidate with its own time alone
        listen(lambda name: self.channel.send(Phase(phase=COMPILING if name else COMPILED, detail=name or "")))
        torch.backends.cuda.matmul.allow_tf32 = job.allow_tf32_matmul
        torch.backends.cudnn.allow_tf32 = job.allow_tf32_cudnn
        cast = getattr(torch, job.cast_floats_to) if job.cast_floats_to else None
        self.shared: SharedInputsView | None = None
        try:
            self._run(command, exchange, cast)
        except Stop:
            return
        except TaskFault as exc:
            self.channel.send(TaskFailed(message=str(exc)))
        except torch.OutOfMemoryError as exc:  # the candidate's own calls catch theirs: this one is adaexplore's
            self._out_of_memory(exc)

    def _run(self, command: RunCandidate, exchange: Path, cast: torch.dtype | None) -> None:
        job = command.job
        started = time.perf_counter()
        if job.reduction_check:
            self.tracker.target_compile = False
        if job.one_config and self.backend is Backend.interpret:
            from adaexplore.executor.worker.cpu._interpret_shim import first_config_only

            first_config_only()  # before the guard notes Triton's methods as they are
        if self.backend is Backend.interpret:
            from adaexplore.executor.worker.candidate._compile_only import install_mirrors

            install_mirrors()  # (its launches are compiled for the GPU too) also before the guard
        capture_ptxas_logs()  # for the compile pass, which reads ptxas's log: patched before the guard notes Triton
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
        # what the task's own imports let its candidates use besides the policy's tables (numpy, einops)
        grants = task_grants(Path(job.task_path).read_text(encoding="utf-8"))
        if job.enforce_policy:
            self._check_names(exchange / "candidate.py", grants)

        try:
            module = import_file(
                CANDIDATE_MODULE,
                exchange / "candidate.py",
                builtins=candidate_builtins(ALLOWED_IMPORTS | grants.modules) if job.enforce_policy else None,
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
        if job.sizes == "small" and job.small_sizes:
            shrink_globals(module, job.small_sizes)
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
                coverage=self.coverage,
            )
        )
        if self.backend is Backend.compile:
            self.channel.send(Done())
            return

        proceed: Proceed = self._wait(Proceed)
        if proceed.outputs is not None:
            self.sink = OutputSink(self._map(proceed.outputs.nbytes, "outputs", writable=True), proceed.outputs)
        trials_started = time.perf_counter()
        outputs, launches = self._trials(model, trial_inputs, trial_seeds, command, proceed, guard, exchange)
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
        if self.shared is not None:  # timing's inputs, copied now that the trials' are gone
            self.timing_base = self.shared.timing()
            self.shared.close()
            self.shared = None
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
        from adaexplore.executor.worker.exchange._device_memory import import_buffer

        if self.side is None:
            raise RuntimeError("the evaluator shared device memory with a worker that has no side socket")
        fd = self.side.receive_fd(f"{self.job.job_id}:{what}")
        return import_buffer(fd, nbytes, self.device.index or 0, writable=writable)

    def _shared_inputs(self, task: Any, seeds: list[int], cast: torch.dtype | None, on_device: bool) -> list[Any]:
        """The trial inputs: views of the judge's (read-only in its buffer, each copied as its call begins), or
        drawn here when it shares none."""
        inputs: Inputs = self._wait(Inputs)
        if inputs.shared is None:
            return [make_args(task, "get_inputs", seed, self.device, cast, on_device=on_device) for seed in seeds]
        self.shared = SharedInputsView(self._map(inputs.shared.nbytes, "inputs", writable=False), inputs.shared)
        return self.shared.trials()

    def _check_names(self, path: Path, grants: TaskGrants) -> None:
        """The half of the policy that needs the real modules, before the candidate is imported: a name of an
        allowed import is checked as what it names (torch.nn.quantized.modules.conv.ops is torch.ops)."""
        source = path.read_text(encoding="utf-8")
        violations = check_policy(ast.parse(source), resolve=resolve_dotted, source=source, grants=grants)
        if violations:
            self.state.flags.extend(
                AuditFlag(code=v.code, severity="reject", message=f"line {v.line}: {v.message}") for v in violations
            )
            first = violations[0]
            self._fail(Status.rejected, f"line {first.line}: {first.message}")
