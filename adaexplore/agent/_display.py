"""Progress on the terminal: one live line per task (step, best speedup, counts by status, what it is doing),
and a line per step where the output is not a terminal (a log file, CI)."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import TextIO

from adaexplore import tools
from adaexplore.agent._explore import StepRecord, TaskSummary
from adaexplore.domain import Status
from adaexplore.listing import shorten

__all__ = ["TerminalDisplay", "best_text", "format_speedup", "summary_table"]

_BAR = 20
# the order of the counts on a line: correct first, then the failures from the most telling
_ORDER: list[str] = [  # the counts are keyed by the statuses' values
    Status.ok,
    Status.mismatch,
    Status.compile_error,
    Status.runtime_error,
    Status.syntax_error,
    Status.timeout,
    Status.crashed,
    Status.rejected,
]


def format_speedup(speedup: float | None) -> str:
    return "-" if speedup is None else f"{speedup:.2f}x"


@dataclass
class _Line:
    name: str
    done: int
    total: int
    best: str = "-"
    counts: dict[str, int] = field(default_factory=dict)
    phase: str = "starting"


def _counts(counts: dict[str, int]) -> str:
    keys = sorted(counts, key=lambda k: (_ORDER.index(k) if k in _ORDER else len(_ORDER), k))
    return " ".join(f"{k} {counts[k]}" for k in keys if counts[k]) or "no evaluations yet"


class TerminalDisplay:
    """Implements the loop's Observer on a text stream (stderr by default)."""

    def __init__(self, stream: TextIO | None = None, *, live: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.lines: dict[str, _Line] = {}
        self._drawn = 0
        self._last = 0.0

    # ---- the Observer ---------------------------------------------------------------------------------
    def task_started(self, run_id: str, name: str, steps_done: int, steps_total: int) -> None:
        self.lines[run_id] = _Line(name, steps_done, steps_total)
        resumed = f" (resuming after step {steps_done})" if steps_done else ""
        self._say(f"[{name}] run {run_id}: {steps_total} steps{resumed}")

    def phase(self, run_id: str, text: str) -> None:
        line = self.lines.get(run_id)
        if line is None:
            return
        line.phase = text
        self._redraw(force=False)

    def step_done(self, run_id: str, record: StepRecord, counts: dict[str, int]) -> None:
        line = self.lines[run_id]
        line.done, line.counts = record.step, counts
        line.best = format_speedup(record.best_speedup) if record.best_node_id is not None else "-"
        if record.best_node_id is not None and record.best_speedup is None:
            estimated = record.best_estimated_speedup
            line.best = f"{format_speedup(estimated)} est." if estimated is not None else "correct (not timed)"
        if not self.live:
            if record.node_id is None:
                what = f"given up ({record.problem})"
            else:
                what = f"node {record.node_id} ({record.action} step from {record.parent_id}): {record.status}"
                if record.speedup is not None:
                    what += f" {format_speedup(record.speedup)}"
                elif record.estimated_speedup is not None:
                    what += f" {format_speedup(record.estimated_speedup)} estimated (not measured)"
                if record.reused:
                    what += " (identical code; evaluation reused)"
                if record.is_new_best:
                    what += ", the new best"
            self._write(f"[{line.name}] step {record.step}/{line.total}: {what}\n")
        else:
            self._redraw(force=True)

    def say(self, text: str) -> None:
        """A line about no one task (a model request being retried)."""
        self._say(text)

    def notice(self, run_id: str, text: str) -> None:
        line = self.lines.get(run_id)
        self._say(f"[{line.name if line else run_id}] {text}")

    def task_finished(self, summary: TaskSummary) -> None:
        line = self.lines.get(summary.run_id)
        if line is not None:
            line.done = summary.steps_done
            line.phase = summary.status if summary.status == "finished" else f"stopped: {summary.reason}"
        self._redraw(force=True)

    # ---- drawing --------------------------------------------------------------------------------------
    def _render(self, line: _Line) -> str:
        filled = round(_BAR * line.done / line.total) if line.total else 0
        bar = "█" * filled + "░" * (_BAR - filled)
        progress = f"{line.done:>3}/{line.total:<3}"
        return f"{line.name:<20.20} {bar} {progress} best {line.best:<8} {_counts(line.counts)} · {line.phase}"

    def _say(self, text: str) -> None:
        if self.live:
            self._clear()
            self._write(text + "\n")
            self._redraw(force=True)
        else:
            self._write(text + "\n")

    def _clear(self) -> None:
        if self._drawn:
            self._write(f"\x1b[{self._drawn}F\x1b[J")
            self._drawn = 0

    def _redraw(self, *, force: bool) -> None:
        if not self.live:
            return
        now = time.monotonic()
        if not force and now - self._last < 0.1:
            return
        self._last = now
        self._clear()
        width = 200
        for line in self.lines.values():
            self._write(shorten(self._render(line), width) + "\n")
        self._drawn = len(self.lines)

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()


def best_text(s: TaskSummary) -> str:
    """A task's best kernel as the summary names it: the number `runs` and best_kernel give, and its source."""
    if s.best_node_id is None:
        return "none correct"
    ties = f", {s.tied + 1} tied" if s.tied else ""
    if s.best_speedup is None and s.estimated_speedup is not None:
        return f"{tools.speedup_text(None, s.estimated_speedup)} node {s.best_node_id} (estimated, not measured{ties})"
    if s.best_speedup is None:
        return f"node {s.best_node_id} (untimed{ties})"
    return f"{tools.speedup_text(s.best_speedup)} node {s.best_node_id} ({s.measured}{ties})"


def summary_table(summaries: list[TaskSummary]) -> str:
    """The end-of-run table: one row per task."""
    header = ["task", "run", "status", "steps", "correct", "best", "tokens", "cost", "best kernel"]
    rows = []
    for s in summaries:
        correct = s.counts.get(Status.ok, 0)
        evaluated = sum(s.counts.values())
        best = best_text(s)
        if s.best_node_id is not None and s.verified:
            best += " ✓"
        rows.append(
            [
                s.task_name,
                s.run_id,
                s.status,
                f"{s.steps_done}/{s.steps_total}",
                f"{correct}/{evaluated}",
                best,
                f"{s.usage.tokens:,}",
                f"${s.usage.cost_usd:.4f}",
                str(s.best_file) if s.best_file else "-",
            ]
        )
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in [header, *rows]]
    return "\n".join(lines)
