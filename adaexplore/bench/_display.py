"""A bench's progress on the terminal: rich's live progress bar (problems done of total, the problem under
way and what it is doing, the statuses so far, an ETA); one plain line per problem where stderr is not a
terminal (a log file, CI)."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

from adaexplore.bench._table import format_speedup, status_counts
from adaexplore.listing import shorten
from adaexplore.store import BenchProblemRecord, BenchRecord

if TYPE_CHECKING:
    from adaexplore.agent import StepRecord, TaskSummary
    from adaexplore.bench._suite import Problem

__all__ = ["BenchDisplay"]


class BenchDisplay:
    """The bench's observer and the search loop's, on stderr."""

    def __init__(self, stream: TextIO | None = None, *, live: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.counts: dict[str, int] = {}
        self.current: dict[int, str] = {}  # problem id -> what it is doing
        self._runs: dict[str, int] = {}  # run id -> problem id
        self._names: dict[int, str] = {}
        self._done = self._total = 0
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._started = time.monotonic()

    # ---- the bench -----------------------------------------------------------------------------------
    def bench_started(self, bench: BenchRecord, total: int, done: int) -> None:
        self._done, self._total = done, total
        again = f", {done} done before" if done else ""
        self.say(f"bench {bench.id}: {total} problems of {bench.suite} ({bench.mode} mode{again})")
        if self.live:
            console = Console(file=self.stream)
            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[statuses]}"),
                TimeRemainingColumn(elapsed_when_finished=True),
                TextColumn("{task.fields[now]}"),
                console=console,
                transient=False,
            )
            self._progress.start()
            self._task = self._progress.add_task("problems", total=total, completed=done, statuses="", now="")

    def problem_started(self, problem: Problem, run_id: str | None) -> None:
        self._names[problem.id] = problem.name
        self.current[problem.id] = "starting"
        self._refresh()

    def problem_run(self, problem_id: int, run_id: str) -> None:
        self._runs[run_id] = problem_id

    def problem_phase(self, problem_id: int, text: str) -> None:
        if problem_id in self.current:
            self.current[problem_id] = text
            self._refresh()

    def problem_done(self, row: BenchProblemRecord) -> None:
        self._done += 1
        status = row.status or "pending"
        self.counts[status] = self.counts.get(status, 0) + 1
        self.current.pop(row.problem_id, None)
        what = status if row.speedup is None else f"{status} {format_speedup(row.speedup)}"
        if row.compile_speedup is not None:
            what += f" ({format_speedup(row.compile_speedup)} vs torch.compile)"
        seconds = f" in {row.seconds:.1f} s" if row.seconds is not None else ""
        line = f"[{self._done}/{self._total}] {row.problem_id} {row.name}: {what}{seconds}"
        if row.degenerate:
            line += f" ({row.degenerate})"
        if status not in ("ok", "pending") and row.message:
            line += f": {shorten(row.message.splitlines()[0], 160)}"
        if self._progress is not None and self._task is not None:
            self._progress.console.print(line, markup=False, highlight=False)
            self._progress.update(self._task, completed=self._done)
        else:
            self.say(line)
        self._refresh()

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def say(self, text: str) -> None:
        if self._progress is not None:
            self._progress.console.print(text, markup=False, highlight=False)
        else:
            self.stream.write(text + "\n")
            self.stream.flush()

    def _refresh(self) -> None:
        if self._progress is None or self._task is None:
            return
        now = "; ".join(
            shorten(f"{pid} {self._names.get(pid, '')}: {text}", 70) for pid, text in sorted(self.current.items())
        )
        self._progress.update(self._task, statuses=status_counts(self.counts), now=now)

    # ---- the search loop's Observer ------------------------------------------------------------------
    def task_started(self, run_id: str, name: str, steps_done: int, steps_total: int) -> None:
        pass

    def phase(self, run_id: str, text: str) -> None:
        if run_id in self._runs:
            self.problem_phase(self._runs[run_id], text)

    def step_done(self, run_id: str, record: StepRecord, counts: dict[str, int]) -> None:
        if run_id in self._runs and record.total > 1:
            best = format_speedup(record.best_speedup) if record.best_node_id is not None else "-"
            self.problem_phase(self._runs[run_id], f"step {record.step}/{record.total}, best {best}")

    def notice(self, run_id: str, text: str) -> None:
        if run_id in self._runs and not self.live:
            self.say(f"  problem {self._runs[run_id]}: {text}")

    def task_finished(self, summary: TaskSummary) -> None:
        pass
