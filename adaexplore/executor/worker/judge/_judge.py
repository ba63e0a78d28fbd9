"""The judge: computes reference outputs and reference timings, and compares candidate outputs.

It runs the task's code and reads candidate outputs as raw bytes; it never imports a candidate. On a GPU
the bytes stay on the device: the judge shares its inputs with the candidate's worker, read-only, and the
candidate writes its outputs into a buffer the judge allocated, which the judge copies before it compares.
References are kept between evaluations in a cache bounded in bytes (worker/judge/_references.py).

The judge serves several evaluations at once, one request at a time. A request for a job it does not hold (one
loaded in a judge process that has since been replaced) is answered as adaexplore's failure, never by exiting:
the judge's other jobs are not lost with it.
"""

from __future__ import annotations

import contextlib
import gc
import os
from typing import Any

import torch

from adaexplore.config import ExecutorConfig
from adaexplore.domain import ErrorDetail, SizeValue, Status
from adaexplore.executor.wire._protocol import (
    Compare,
    Compared,
    Failed,
    JobSpec,
    Load,
    Loaded,
    MemoryQuery,
    MemoryReport,
    Prepare,
    Prepared,
    ReferenceTimed,
    Release,
    TaskFailed,
    TimeReference,
)
from adaexplore.executor.wire._side import SideSocket
from adaexplore.executor.worker.confine._faults import DeviceMemoryError, TaskFault
from adaexplore.executor.worker.confine._inductor_env import compile_failure, prepare_inductor
from adaexplore.executor.worker.cost._full_size import reduction_sizes, reference_work
from adaexplore.executor.worker.exchange._device_memory import DeviceBuffer
from adaexplore.executor.worker.exchange._shared import output_layout, share_inputs
from adaexplore.executor.worker.judge._judge_compare import Job, compare_outputs, timing_base
from adaexplore.executor.worker.judge._reference_build import ReferenceBuilder
from adaexplore.executor.worker.judge._references import ReferenceCache, reference_key
from adaexplore.executor.worker.timing._perturb import has_integer_inputs
from adaexplore.executor.worker.timing._timing import Timer, summarize

__all__ = ["Judge"]


class _NotHeld(LookupError):
    """A request named a job this judge does not hold."""


class Judge:
    def __init__(
        self,
        device: torch.device,
        side: SideSocket | None = None,
        budget: int | None = None,
        share: float | None = None,
    ) -> None:
        self.device = device
        self.side = side
        if budget is None:
            budget = int((share or ExecutorConfig().judge_memory_share) * _device_total(device))
        self.cache = ReferenceCache(budget, device)
        self.jobs: dict[str, Job] = {}
        self.builder = ReferenceBuilder(device)
        # the bytes of the last reference built per task file and sizes: the room a new one needs
        self._last_size: dict[tuple[str, str], int] = {}
        # what each task's reference does at full size, per task file and cast (see _work_record), and the sizes
        # of its precision check (`_task_facts`)
        self._work: dict[tuple[str, str | None], dict[str, Any]] = {}
        self._full_work: dict[tuple[str, str | None], tuple[Any, str]] = {}
        self._timer: Timer | None = None

    def handle(self, command: Load | Prepare | Compare | TimeReference | Release | MemoryQuery) -> Any:
        try:
            return self._handle(command)
        finally:
            if self.device.type == "cuda" and not isinstance(command, MemoryQuery):
                # what a command allocated for a while (a float64 reference's intermediates, copies compared)
                # goes back to the device, so that the judge holds its cache and little more while the
                # candidate runs
                torch.cuda.empty_cache()

    def _handle(self, command: Load | Prepare | Compare | TimeReference | Release | MemoryQuery) -> Any:
        try:
            if isinstance(command, Load):
                return self.load(command.job)
            if isinstance(command, Prepare):
                return self.prepare(self._job(command.job_id), command.output_sets, command.output_bytes)
            if isinstance(command, Compare):
                return self.compare(command)
            if isinstance(command, TimeReference):
                return self.time_reference(command)
            if isinstance(command, MemoryQuery):
                return self.memory(command)
            self.release(command.job_id)
            return self.memory()  # what it keeps now: the evaluator counts the references no job uses
        except _NotHeld as exc:
            return Failed(
                status=Status.infra_error,
                message=f"the judge holds no job {exc.args[0]!r} for this {command.kind} request: the job was loaded "
                "in a judge process that has been replaced since, or was released",
            )
        except TaskFault as exc:
            return TaskFailed(message=str(exc))
        except DeviceMemoryError as exc:
            self.cache.evict_all()  # the references no job uses: room for the retry
            message = f"the judge could not share GPU memory: {exc}"
            return Failed(status=Status.infra_error, message=message, error=_memory_error(message, exc.out_of_memory))
        except torch.OutOfMemoryError as exc:
            self.cache.evict_all()
            too_large = self._too_large(command, exc)
            if too_large is not None:
                return TaskFailed(message=too_large)
            # the judge's own allocation, within its budget: the device is taken by someone else
            message = (
                f"the judge ran out of GPU memory while holding {self.cache.held() / 2**30:.2f} GiB "
                f"(budget {self.cache.budget / 2**30:.2f} GiB): {str(exc).splitlines()[0]}"
            )
            return Failed(status=Status.infra_error, message=message, error=_memory_error(message, True))

    def _job(self, job_id: str) -> Job:
        job = self.jobs.get(job_id)
        if job is None:
            raise _NotHeld(job_id)
        return job

    def _too_large(self, command: object, exc: torch.OutOfMemoryError) -> str | None:
        """Why a task does not fit on this GPU, when the judge ran out of memory loading or preparing it while
        it held nothing of another task's; None when other work holds memory (then the fault is not the task's)."""
        if isinstance(command, Load):
            spec = command.job
        elif isinstance(command, Prepare) and command.job_id in self.jobs:
            spec = self.jobs[command.job_id].spec
        else:
            return None
        if any(key != spec.job_id for key in self.jobs):
            return None
        _, total = torch.cuda.mem_get_info(self.device) if self.device.type == "cuda" else (0, 0)
        sizes = (
            f"its small sizes {spec.small_sizes}"
            if spec.sizes == "small" and spec.small_sizes
            else "the sizes its get_inputs and get_init_inputs make"
        )
        return (
            f"it does not fit on this GPU: its reference, inputs and outputs at {sizes} need more than the "
            f"{total / 2**30:.1f} GiB of {self.device} (the judge may keep {self.cache.budget / 2**30:.1f} GiB); "
            f"make the task smaller. {str(exc).splitlines()[0]}"
        )

    def memory(self, query: MemoryQuery | None = None) -> MemoryReport:
        if query is not None and query.evict_idle:
            self.cache.evict_all()
        report = MemoryReport(
            judge=str(self.device),
            budget_bytes=self.cache.budget,
            cached_bytes=self.cache.held(),
            entries=len(self.cache),
            idle_bytes=self.cache.idle(),
        )
        if query is not None and query.task_path is not None:
            report.work, report.work_note = self._work_of(query.task_path, query.cast_floats_to)
        if self.device.type == "cuda":
            free, total = torch.cuda.mem_get_info(self.device)
            report.allocated_bytes = torch.cuda.memory_allocated(self.device)
            report.reserved_bytes = torch.cuda.memory_reserved(self.device)
            report.free_bytes, report.total_bytes = free, total
        return report

    # ------------------------------------------------------------------------------------------
    def load(self, spec: JobSpec) -> Loaded:
        key = reference_key(spec)
        ref = self.cache.get(key)
        cached = ref is not None
        if ref is None:
            self.cache.make_room(self._last_size.get((spec.task_path, spec.sizes), 0))
            ref = self.builder.build(spec)
            self.cache.add(key, ref)
        # fresh seeds are drawn for one evaluation: that reference is not asked for again once it is done (one
        # built ahead is kept for the evaluation that will take its seeds)
        ref.keep = spec.init_seed is None or spec.keep_reference
        ref.users += 1
        job = self.jobs[spec.job_id] = Job(spec=spec, key=key, ref=ref, cached=cached)
        facts = self._task_facts(spec)
        drew = None if cached else self.builder.last_draw
        shares = spec.device_exchange and self.device.type == "cuda" and self.side is not None
        if shares and not ref.inputs:  # kept by a job that did not share them
            self.builder.redraw(ref, spec)
            drew = self.builder.last_draw
        if drew is not None:
            facts = {
                **facts,
                "draw_s": round(drew.seconds, 4),
                "drawn_in_processes": drew.in_processes,
                "draw_note": drew.note,
            }
        if not shares:
            return Loaded(cached=cached, **facts)
        if ref.timing_base is None:
            ref.timing_base = self.builder.inputs(ref, spec, ref.timing_seed)
        shared = share_inputs(ref.inputs, ref.timing_base, self.device)
        if shared is None:
            return Loaded(cached=cached, **facts)
        job.inputs, layout = shared
        self._hold(job, job.inputs.nbytes)
        self._send(job.inputs, f"{spec.job_id}:inputs")
        return Loaded(inputs=layout, cached=cached, **facts)

    def _task_facts(self, spec: JobSpec) -> dict[str, Any]:
        """What the task's reference does at its full sizes, and the sizes of a check at its full reduction
        lengths (at small sizes), found once per task file and cast."""
        key = (spec.task_path, spec.cast_floats_to)
        if key not in self._work:
            cast = getattr(torch, spec.cast_floats_to) if spec.cast_floats_to else None
            work, note = self._work_of(spec.task_path, spec.cast_floats_to)
            sizes: dict[str, SizeValue] | None
            names: list[str]
            sizes, names = (None, [])
            if spec.sizes == "small" and spec.small_sizes:
                sizes, names = reduction_sizes(spec.task_path, spec.small_sizes, cast)
            self._work[key] = {"work": work, "work_note": note, "reduction_sizes": sizes, "reduction_names": names}
        return self._work[key]

    def _work_of(self, task_path: str, cast_floats_to: str | None) -> tuple[Any, str]:
        """What the task's reference does at its full sizes, and why not where it cannot be followed: recorded
        once per task file and cast, on shape-only tensors."""
        key = (task_path, cast_floats_to)
        if key not in self._full_work:
            self._full_work[key] = reference_work(task_path, getattr(torch, cast_floats_to) if cast_floats_to else None)
        return self._full_work[key]

    def _hold(self, job: Job, nbytes: int) -> None:
        """Count a shared buffer of `job` against the budget, evicting unused references to make room."""
        job.buffers_bytes += nbytes
        self.cache.extra += nbytes
        self.cache.make_room(0)

    def _send(self, buffer: DeviceBuffer, tag: str) -> None:
        assert self.side is not None
        fd = buffer.export()
        try:
            self.side.send_fd(fd, tag)
        finally:
            os.close(fd)

    def prepare(self, job: Job, output_sets: int = 0, output_bytes: int = 1 << 32) -> Prepared:
        spec, ref = job.spec, job.ref
        torch.backends.cuda.matmul.allow_tf32 = spec.allow_tf32_matmul
        torch.backends.cudnn.allow_tf32 = spec.allow_tf32_cudnn
        if not ref.prepared:
            self.builder.compute(ref, spec, self._work.get((spec.task_path, spec.cast_floats_to), {}).get("work"))
            if not ((spec.device_exchange or spec.keep_reference) and self.device.type == "cuda"):
                ref.inputs = []  # raw-file jobs: the candidate draws its own, and the judge needs none after this
            size = self.cache.measure(job.key, ref, spec.task_path.rsplit("/", 1)[-1])
            self._last_size[(spec.task_path, spec.sizes)] = size
        if job.inputs is not None and not ref.keep:
            # the trials' inputs now live in the buffer the candidate's worker copies them from, and this
            # reference serves no other job: the judge needs only the reference's outputs and timing's inputs
            ref.inputs = []
        outputs = None
        if spec.device_exchange and self.device.type == "cuda" and self.side is not None and ref.refs:
            # the candidate's outputs have the native reference's types (the float64 one only checks them)
            shapes = [(list(t.shape), d) for t, d in zip(ref.refs[0], ref.dtypes, strict=True)]
            per_set = output_layout(shapes, 1).nbytes
            sets = max(len(ref.refs), min(output_sets, output_bytes // per_set))
            job.layout = output_layout(shapes, sets)
            job.outputs = _allocate(job.layout.nbytes, self.device)
            job.outputs.tensor.fill_(255)  # NaN in every float type: an output never written does not pass
            self._hold(job, job.outputs.nbytes)
            self._send(job.outputs, f"{spec.job_id}:outputs")
            outputs = job.layout
        return Prepared(
            init_seed=ref.init_seed,
            trial_seeds=ref.trial_seeds,
            timing_seed=ref.timing_seed,
            tolerances=ref.tolerances,
            task_flags=ref.flags,
            reference_mutates_inputs=ref.mutates_inputs,
            reference_aliases_inputs=ref.aliases_inputs,
            degeneracy=ref.degeneracy,
            small_degeneracy=ref.small_degeneracy,
            degeneracy_checked=ref.degeneracy_checked,
            output_elements=max(sum(t.numel() for t in refs) for refs in ref.refs) if ref.refs else None,
            outputs=outputs,
        )

    def release(self, job_id: str) -> None:
        job = self.jobs.pop(job_id, None)
        if job is None:
            return
        for buffer in (job.inputs, job.outputs):
            if buffer is not None:
                buffer.close()
        self.cache.extra -= job.buffers_bytes
        job.ref.users -= 1
        if not job.ref.keep and job.ref.users == 0:
            self.cache.drop(job.key)
        elif self.device.type == "cuda":
            torch.cuda.empty_cache()

    # ------------------------------------------------------------------------------------------
    def compare(self, command: Compare) -> Compared:
        return compare_outputs(self._job(command.job_id), command, self.builder, self.device)

    # ------------------------------------------------------------------------------------------
    def time_reference(self, command: TimeReference) -> ReferenceTimed:
        job = self._job(command.job_id)
        if self._timer is None:
            self._timer = Timer(self.device)
        base = timing_base(job, self.builder)
        native = job.ref.native
        stats = self._measure(lambda args: native(*args), base, command, job)
        compile_stats, compile_error = None, None
        if command.with_compile:
            prepare_inductor()
            try:
                compiled = torch.compile(native)
                with torch.no_grad() if command.timing.no_grad else contextlib.nullcontext():
                    compiled(*base)
                compile_stats = self._measure(lambda args: compiled(*args), base, command, job)
                del compiled
            except torch.OutOfMemoryError:
                raise
            except Exception as exc:  # inductor's own failure: the eager timing stands, the baseline is missing
                compile_error = compile_failure(exc)
            finally:
                # the compiled graph and its caches hold on to the model and its buffers, and a failed
                # compile's frames to its inputs until they are collected
                torch._dynamo.reset()
                gc.collect()
        return ReferenceTimed(stats=stats, compile_stats=compile_stats, compile_error=compile_error)

    def _measure(self, call: Any, base: list[Any], command: TimeReference, job: Job) -> Any:
        assert self._timer is not None
        try:
            measured = self._timer.measure(
                call,
                base,
                command.timing,
                budget_ms=command.budget_ms,
                min_reps=command.min_reps,
                max_reps=command.max_reps,
                # timed as the candidate is: a task with integer inputs draws each call's inputs anew
                redraw=(lambda seed: self.builder.inputs(job.ref, job.spec, seed))
                if has_integer_inputs(base)
                else None,
            )
        except torch.OutOfMemoryError:
            raise
        except Exception as exc:
            raise TaskFault(f"the reference Model raised while being timed: {type(exc).__name__}: {exc}") from exc
        return summarize(measured.times_ms, command.timing, measured.warmup_n)


def _memory_error(message: str, out_of_memory: bool) -> ErrorDetail | None:
    """What marks a judge's failure as the device's memory running out (the evaluator retries it alone)."""
    return ErrorDetail(type="OutOfMemoryError", message=message, phase="judge") if out_of_memory else None


def _allocate(nbytes: int, device: torch.device) -> DeviceBuffer:
    from adaexplore.executor.worker.exchange._device_memory import export_buffer

    return export_buffer(nbytes, device.index or 0)


def _device_total(device: torch.device) -> int:
    """The memory the judge's share is of: the GPU's, or the host's as far as this process may use it."""
    if device.type == "cuda":
        return int(torch.cuda.get_device_properties(device).total_memory)
    import resource

    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit != resource.RLIM_INFINITY:
        return int(limit)
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 8 << 30
