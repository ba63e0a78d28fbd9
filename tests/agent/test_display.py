"""The progress display: a live bar per task on a terminal, a line per step elsewhere, and the summary table."""

from __future__ import annotations

import io
from pathlib import Path

from adaexplore.agent import StepRecord, TaskSummary
from adaexplore.agent._display import TerminalDisplay, summary_table
from adaexplore.store import UsageTotals


def record(step: int, status: str | None, *, speedup: float | None = None, best: int | None = None) -> StepRecord:
    return StepRecord(
        step=step, total=10, node_id=None if status is None else step + 1, parent_id=1, action="large",
        status=status, speedup=speedup, best_speedup=speedup, best_node_id=best, is_new_best=best == step + 1,
        reused=False, problem="the reply has no code" if status is None else None, rule=None,
        model_s=1.0, eval_s=2.0, total_s=3.01,
    )  # fmt: skip


def summary(name: str, *, speedup: float | None, verified: bool, best: int | None) -> TaskSummary:
    usage = UsageTotals(calls=3, input_tokens=1200, output_tokens=800, cost_usd=0.0123, seconds=2.0, by_purpose={})
    return TaskSummary(
        task_id="t", task_name=name, run_id=f"run-{name}", status="finished", reason="all steps taken",
        steps_done=10, steps_total=10, counts={"ok": 4, "compile_error": 6}, best_node_id=best,
        best_speedup=speedup, verified=verified, timed=speedup is not None, best_path=[1, best or 1],
        best_file=Path(f"/runs/run-{name}/best.py") if best else None, usage=usage, failed_steps=0,
        rules_recorded=1, measured="re-measured" if verified and speedup is not None else "untimed",
        tied=2 if speedup is None and best else 0,
    )  # fmt: skip


def test_a_terminal_gets_one_redrawn_bar_per_task() -> None:
    stream = io.StringIO()
    display = TerminalDisplay(stream, live=True)
    display.task_started("r1", "row_softmax", 0, 10)
    display.task_started("r2", "layernorm", 4, 10)
    display.step_done("r1", record(5, "ok", speedup=1.5, best=6), {"ok": 3, "mismatch": 2})
    text = stream.getvalue()
    assert "[layernorm] run r2: 10 steps (resuming after step 4)" in text
    last = text.rsplit("\x1b[J", 1)[-1].splitlines()  # what is on screen after the last redraw
    assert len(last) == 2
    assert last[0].startswith("row_softmax") and "█" * 10 + "░" * 10 in last[0]
    assert "5/10" in last[0] and "best 1.50x" in last[0] and "ok 3 mismatch 2" in last[0]
    assert "█" * 8 + "░" * 12 in last[1] and "4/10" in last[1] and "no evaluations yet" in last[1]
    assert "\x1b[2F" in text  # two lines drawn, so the redraw moves up two


def test_a_log_gets_a_line_per_step() -> None:
    stream = io.StringIO()
    display = TerminalDisplay(stream, live=False)
    display.task_started("r1", "row_softmax", 0, 10)
    display.step_done("r1", record(1, "ok", speedup=2.0, best=2), {"ok": 1})
    display.step_done("r1", record(1, None), {"ok": 1})
    lines = stream.getvalue().splitlines()
    assert lines[1] == "[row_softmax] step 1/10: node 2 (large step from 1): ok 2.00x, the new best"
    assert lines[2] == "[row_softmax] step 1/10: given up (the reply has no code)"
    assert "\x1b" not in stream.getvalue()


def test_the_summary_table_aligns_its_columns() -> None:
    table = summary_table(
        [
            summary("row_softmax", speedup=1.59, verified=True, best=3),
            summary("gemm_epilogue_long_name", speedup=None, verified=False, best=6),
            summary("mlp", speedup=None, verified=False, best=None),
            summary("layernorm", speedup=None, verified=True, best=7),  # confirmed without a GPU: correct again
        ]
    )
    header, *rows = table.splitlines()
    assert header.split() == ["task", "run", "status", "steps", "correct", "best", "tokens", "cost", "best", "kernel"]
    assert "1.590x node 3 (re-measured) ✓" in rows[0] and "none correct" in rows[2]
    assert "node 6 (untimed, 3 tied)" in rows[1] and "node 7 (untimed, 3 tied) ✓" in rows[3] and "✓" not in rows[1]
    assert all("4/10" in row and "2,000" in row and "$0.0123" in row for row in rows)
    column = header.index("run")
    assert all(row[column:].startswith("run-") for row in rows)
