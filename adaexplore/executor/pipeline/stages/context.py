"""The state of one evaluation while it runs, and the verdict that ends it early."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import anyio
from pydantic import BaseModel, ConfigDict

from adaexplore.domain import (
    Audit,
    AuditFlag,
    Backend,
    Correctness,
    ErrorDetail,
    Estimate,
    Mode,
    Seeds,
    SizeValue,
    SpeedOfLight,
    Status,
    Timing,
)
from adaexplore.executor.host._pool import JudgeClient
from adaexplore.executor.tasks._task import Task
from adaexplore.executor.wire._modes import ModeSpec, mode_spec
from adaexplore.executor.wire._protocol import Coverage, Event
from adaexplore.roofline import ForwardWork, GpuCalibration, TaskWork

__all__ = ["Pending", "Progress", "ProgressUpdate", "Run", "Verdict"]


class ProgressUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    stage: str
    message: str
    elapsed_s: float
    done: int | None = None
    total: int | None = None


Progress = Callable[[ProgressUpdate], Awaitable[None]]


class Verdict(Exception):
    """Ends an evaluation early with this status. For `infra_error`: the `phase` it happened in; the judge's
    process when that was at fault (it broke: it is restarted before the retry; with `retire`, it holds memory it
    should not: it is replaced once no other evaluation's job is in it); and whether the device's memory ran out
    (`memory`: the retry holds the device alone)."""

    def __init__(
        self,
        status: Status,
        message: str,
        error: ErrorDetail | None = None,
        *,
        phase: str | None = None,
        judge: object | None = None,
        retire: bool = False,
        memory: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error = error
        self.phase = phase
        self.judge = judge
        self.retire = retire
        self.memory = memory


class Run:
    """The state of one evaluation (one attempt of it) while it runs."""

    def __init__(self, task: Task, code: str, mode: Mode, progress: Progress | None) -> None:
        self.task = task
        self.code = code.removeprefix("\ufeff")  # a byte order mark, as some editors write: Python ignores it
        self.mode = mode
        self.spec: ModeSpec = mode_spec(mode)
        self.progress = progress
        self.started = time.perf_counter()
        self.phases: dict[str, float] = {}
        self.audit = Audit()
        self.output: list[str] = []
        self.correctness: Correctness | None = None
        self.timing: Timing | None = None
        self.seeds: Seeds | None = None
        self.backends: list[Backend] = []
        self.planned: list[Backend] = []
        self.versions: dict[str, str | None] = {}
        self.compile_target: str | None = None
        self.sizes: str = "full"
        self.fingerprint = ""
        # the GPU the numeric stage ran on (None: a CPU backend)
        self.device: int | None = None
        # how tensors passed between the workers: "device" or "files" (Provenance.tensor_exchange)
        self.exchange = ""
        # the directories of the workers this evaluation used (their paths are scrubbed from messages)
        self.exchanges: list[Path] = []
        # the judge of the numeric stage running now, which the fault checks may ask about its memory
        self.judge: JudgeClient | None = None
        # the infra verdict that ended this attempt, if one did
        self.fault: Verdict | None = None
        # this attempt reserves the whole device (a retry after the device's memory ran out); and what it was
        # granted: whether it held the device alone, and the bytes it reserved (None: no reservation on the CPU)
        self.alone = False
        self.held_alone = False
        self.reserved_bytes: int | None = None
        # the time the candidate may take over all its phases (None: each phase's own timeout only), and
        # what it took so far
        self.candidate_budget_s: float | None = None
        self.candidate_spent_s = 0.0
        # on the CPU backends: the budget bounds the candidate's wall time too, not only its CPU time (where a
        # client waits for the answer), and the wall time it took so far (see stages/budget.py)
        self.candidate_budget_wall = True
        self.candidate_wall_s = 0.0
        # the wall time the Triton compiler took in the waits so far (never counted against the budget)
        self.compile_wall_s = 0.0
        # a longer timeout per trial than executor.trial_timeout_s, for a check that runs at larger sizes
        self.trial_timeout_s: float | None = None
        # the seconds the judge spent on this evaluation's reference before it began (built ahead on its seeds)
        self.ahead_s: float | None = None
        # the interpreter runs one config of each autotuned kernel (JobSpec.one_config)
        self.one_config = False
        # the evaluator's check at the full reduction lengths (JobSpec.reduction_check), and the name of the
        # evaluator's own check this run is, for its messages (None: the candidate's evaluation)
        self.reduction_check = False
        self.check: str | None = None
        # what the reference and the candidate do at the task's full sizes (see stages/speed.py), and the
        # kernels the candidate's trials launched
        self.task_work: TaskWork | None = None
        self.task_work_note = ""
        self.candidate_work: ForwardWork | None = None
        # whether that forward writes every element of its outputs (see stages/coverage.py), and whether the
        # verdict has been drawn from it
        self.coverage: Coverage | None = None
        self.coverage_checked = False
        self.trial_kernels: list[str] | None = None
        # the small sizes with the reduction lengths back at full size, and their names (see stages/precision.py)
        self.reduction_sizes: dict[str, SizeValue] | None = None
        self.reduction_names: list[str] = []
        # the calibrations a store's GPU verdicts fitted (`adaexplore calibrate`): an estimate for one of their GPUs
        # uses that GPU's
        self.calibrations: list[GpuCalibration] = []
        # what result.settle_speed made of them
        self.speed_of_light: SpeedOfLight | None = None
        self.estimate: Estimate | None = None
        self.estimate_note = ""

    async def report(self, stage: str, message: str, done: int | None = None, total: int | None = None) -> None:
        if self.progress is not None:
            await self.progress(
                ProgressUpdate(
                    stage=stage,
                    message=message,
                    done=done,
                    total=total,
                    elapsed_s=round(time.perf_counter() - self.started, 3),
                )
            )

    def add_flags(self, flags: list[AuditFlag]) -> None:
        for flag in flags:
            if flag not in self.audit.flags:
                self.audit.flags.append(flag)

    def add_phase(self, name: str, seconds: float) -> None:
        self.phases[name] = round(self.phases.get(name, 0.0) + seconds, 4)

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add_phase(name, time.perf_counter() - start)

    def scrub(self, text: str) -> str:
        for exchange in self.exchanges:
            text = text.replace(str(exchange / "candidate.py"), "candidate.py").replace(str(exchange), ".")
        return text


class Pending:
    """An awaitable started now whose result (or exception) is collected later."""

    def __init__(self, awaitable: Awaitable[Event]) -> None:
        self._awaitable = awaitable
        self._done = anyio.Event()
        self._value: Event | None = None
        self._error: BaseException | None = None

    async def run(self) -> None:
        try:
            self._value = await self._awaitable
        except Exception as exc:
            self._error = exc
        finally:
            self._done.set()

    async def result(self) -> Event | None:
        await self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value
