"""A bench's results as text (a per-problem table, then the summary), as JSON and as CSV."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

from rich.console import Console, JustifyMethod
from rich.table import Table

from adaexplore.bench._metrics import FAST_AT, BenchSummary, ProblemScore, SpeedupSummary, summarize
from adaexplore.listing import shorten
from adaexplore.store import BenchProblemRecord, BenchRecord

__all__ = [
    "bench_document",
    "bench_summary",
    "format_speedup",
    "render_bench",
    "render_bench_list",
    "status_counts",
    "write_csv",
]

_COLUMNS = [
    "problem_id",
    "name",
    "status",
    "speedup",
    "compile_speedup",
    "estimated_speedup",
    "sol_fraction",
    "triton_share",
    "flags",
    "degenerate",
    "seconds",
    "task_id",
    "run_id",
    "node_id",
    "message",
]


_ORDER = ["ok", "mismatch", "compile_error", "runtime_error", "syntax_error", "timeout", "crashed", "rejected"]


def format_speedup(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def status_counts(counts: dict[str, int]) -> str:
    keys = sorted(counts, key=lambda k: (_ORDER.index(k) if k in _ORDER else len(_ORDER), k))
    return " ".join(f"{k} {counts[k]}" for k in keys if counts[k]) or "none yet"


def bench_summary(rows: Sequence[BenchProblemRecord]) -> BenchSummary:
    return summarize(
        [
            ProblemScore(
                r.status,
                r.speedup,
                r.compile_speedup,
                r.estimated_speedup,
                r.sol_fraction,
                degenerate=r.degenerate is not None,
                name=r.name,
            )
            for r in rows
        ]
    )


def bench_document(bench: BenchRecord, rows: Sequence[BenchProblemRecord]) -> dict[str, object]:
    """Everything `--json` writes: the bench, its summary and its problems."""
    return {
        "bench": bench.as_dict(),
        "summary": bench_summary(rows).as_dict(),
        "problems": [r.model_dump() for r in rows],
    }


def write_csv(bench: BenchRecord, rows: Sequence[BenchProblemRecord]) -> str:
    """The per-problem table, then a blank line and the summary as metric,value rows."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(_COLUMNS)
    for r in rows:
        values = r.model_dump()
        values["flags"] = " ".join(r.flags)
        writer.writerow([values[c] if values[c] is not None else "" for c in _COLUMNS])
    writer.writerow([])
    writer.writerow(["metric", "value"])
    summary = bench_summary(rows).as_dict()
    writer.writerow(["bench", bench.id])
    for key in ("problems", "done", "correct", "correct_rate"):
        writer.writerow([key, summary[key]])
    writer.writerow(["degenerate_left_out", " ".join(bench_summary(rows).degenerate)])
    writer.writerow(
        ["mean_sol_fraction", summary["mean_sol_fraction"] if summary["mean_sol_fraction"] is not None else ""]
    )
    for side in ("vs_eager", "vs_compile", "estimated_vs_eager"):
        block = summary[side]
        if isinstance(block, dict):
            for key, value in block.items():
                if key != "baseline":
                    writer.writerow([f"{side}.{key}", value])
    for key, value in bench.provenance_dict.items():
        writer.writerow([f"provenance.{key}", value])
    return out.getvalue()


def _share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _table(rows: Sequence[BenchProblemRecord]) -> Table:
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("id", "right"),
        ("problem", "left"),
        ("status", "left"),
        ("vs eager", "right"),
        ("vs compile", "right"),
        ("est. vs eager", "right"),
        ("of SOL", "right"),
        ("triton share", "right"),
        ("audit", "left"),
        ("task", "left"),
        ("seconds", "right"),
    )
    for name, justify in columns:
        table.add_column(name, justify=justify)
    for r in rows:
        table.add_row(
            str(r.problem_id),
            shorten(r.name, 44),
            r.status or "pending",
            format_speedup(r.speedup),
            format_speedup(r.compile_speedup),
            format_speedup(r.estimated_speedup) if r.speedup is None else "-",
            _share(r.sol_fraction),
            _share(r.triton_share),
            ",".join(r.flags) or "-",
            "degenerate" if r.degenerate else "-",
            "-" if r.seconds is None else f"{r.seconds:.1f}",
        )
    return table


def _speedup_lines(block: SpeedupSummary | None, baseline: str, summary: BenchSummary) -> list[str]:
    if block is None:
        if summary.correct == 0:
            why = "no correct problem to time"
        elif baseline == "torch.compile" and summary.eager is not None:
            why = "not timed (run the bench with --compile)"
        else:
            why = "not timed (no GPU timing)"
        return [f"vs {baseline}: {why}"]
    fast = ", ".join(f"Fast@{p:g} {100 * block.fast[p]:.0f}%" for p in FAST_AT)
    geo = "-" if block.geomean is None else f"{block.geomean:.3f}x"
    return [
        f"vs {baseline}: mean speedup {block.mean:.3f}x (clamped at 10, incorrect as 0), geometric mean over "
        f"{block.timed} correct {geo}; {fast}"
    ]


def _estimate_lines(summary: BenchSummary) -> list[str]:
    lines = []
    if summary.sol_fraction is not None:
        lines.append(
            f"speed of light: the {summary.sol_timed} timed correct kernels reach {100 * summary.sol_fraction:.0f}% "
            "of it on average"
        )
    block = summary.estimated
    if block is not None:
        geo = "-" if block.geomean is None else f"{block.geomean:.3f}x"
        lines.append(
            f"estimated vs eager (not measured, {block.timed} untimed correct kernels): mean {block.mean:.3f}x "
            f"(clamped at 10, incorrect and measured ones as 0), geometric mean {geo}"
        )
    return lines


def render_bench(bench: BenchRecord, rows: Sequence[BenchProblemRecord], *, width: int = 140) -> str:
    """The per-problem table and the summary, as `bench` prints them at its end and `bench show` again."""
    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None, force_terminal=False)
    console.print(_table(rows))
    summary = bench_summary(rows)
    prov = bench.provenance_dict
    lines = [
        "",
        f"bench {bench.id}: {bench.suite} ({bench.source}), {summary.done} of {summary.problems} problems done, "
        f"status {bench.status}" + (f" ({bench.stop_reason})" if bench.stop_reason else ""),
        f"correct: {summary.correct} of {summary.problems} ({100 * summary.correct_rate:.0f}%); "
        f"statuses: {status_counts(summary.by_status)}"
        + (f"; {len(summary.degenerate)} degenerate left out" if summary.degenerate else ""),
        *_speedup_lines(summary.eager, "eager", summary),
        *_speedup_lines(summary.compile, "torch.compile", summary),
        *_estimate_lines(summary),
        *(f"note: {n}" for n in summary.notes),
        "provenance: "
        + ", ".join(
            f"{k} {prov[k]}" for k in ("gpu", "driver", "torch", "triton", "cuda", "python", "date") if prov.get(k)
        )
        + f", mode {bench.mode}, suite hash {bench.suite_hash}",
    ]
    text = out.getvalue()
    return text + "\n".join(lines) + "\n"


def render_bench_list(benches: Sequence[BenchRecord], rows_of: dict[str, Sequence[BenchProblemRecord]]) -> str:
    if not benches:
        return "no benches yet; `adaexplore bench SUITE --replay DIR` or `--steps N` runs one\n"
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    for name in ("bench", "suite", "mode", "source", "status", "done", "correct", "mean vs eager", "created"):
        table.add_column(name)
    for b in benches:
        summary = bench_summary(rows_of[b.id])
        mean = "not timed" if summary.eager is None else f"{summary.eager.mean:.3f}x"
        table.add_row(
            b.id,
            shorten(b.suite, 40, keep="end"),
            b.mode,
            b.source,
            b.status,
            f"{summary.done}/{summary.problems}",
            str(summary.correct),
            mean,
            b.created_at[:19].replace("T", " "),
        )
    out = io.StringIO()
    console = Console(file=out, width=160, color_system=None, force_terminal=False)
    console.print(table)
    return out.getvalue()


def dumps(document: dict[str, object]) -> str:
    return json.dumps(document, indent=2) + "\n"
