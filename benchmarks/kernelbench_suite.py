"""The evaluator over a whole KernelBench level: one pass-through candidate per problem (the reference's own
operations, the output copied by one Triton kernel), evaluated once and then again (the reference's timing
cached), in each mode, by one long-lived evaluator. One JSON row per evaluation.

    python benchmarks/kernelbench_suite.py --level-dir ../shared/data/kernelbench/level2 --out results.jsonl
    python benchmarks/kernelbench_suite.py --level-dir DIR --ids 1-10,17 --modes strict --out results.jsonl
    python benchmarks/kernelbench_suite.py --summarize results.jsonl

Rows already in `--out` are skipped, so a run cut short (a device call's time limit) resumes where it
stopped; `--home` keeps the evaluator's caches (the reference timings among them) between such runs.
`--ids` splits the level by range. Candidates are checked against the policy before they are evaluated: one that
breaks it is a `rejected` row, and the suite goes on. Where candidates are judged on the CPU backends, each problem
gets the small sizes a search would derive for it (`--no-small-sizes`: its own sizes), and its rows say which.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adaexplore.config import ExecutorConfig, Settings  # noqa: E402
from adaexplore.errors import TaskError  # noqa: E402
from adaexplore.executor import Evaluation, EvaluationOptions, Evaluator, Task, task_from_source  # noqa: E402
from adaexplore.tools.tasks._task_sizes import checks_on_cpu, sized_task  # noqa: E402
from benchmarks.kernelbench_candidates import (  # noqa: E402
    Problem,
    output_bytes,
    parse_ids,
    pass_through,
    policy_problems,
    read_problems,
)

WHICH = ("first", "repeat")
DEFAULT_LEVEL = ROOT.parent / "shared" / "data" / "kernelbench" / "level2"
MESSAGE_CHARS = 300


def make_task(problem: Problem, small_sizes: dict[str, int | float] | None = None) -> Task:
    """The problem as a task; `small_sizes` become its SMALL_SIZES (what the CPU backends run at)."""
    source = problem.source()
    if small_sizes:
        source = source.rstrip() + f"\n\nSMALL_SIZES = {small_sizes!r}\n"
    return task_from_source(source, name=problem.stem)


def row_key(row: dict[str, Any]) -> tuple[int, str, str]:
    return int(row["problem"]), str(row["mode"]), str(row["which"])


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a results file; a line cut short by a killed run is left out."""
    rows = []
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict) and {"problem", "mode", "which"} <= row.keys():
                rows.append(row)
    return rows


def pending(
    problems: Iterable[Problem], modes: list[str], done: set[tuple[int, str, str]]
) -> list[tuple[Problem, str]]:
    """The (problem, mode) pairs with a row still to write, in order."""
    return [(p, m) for p in problems for m in modes if any((p.id, m, w) not in done for w in WHICH)]


def base_row(problem: Problem, mode: str, which: str, status: str, message: str, wall_s: float) -> dict[str, Any]:
    """A row's identity and verdict; alone, the row of an evaluation that gave no result (the task failed,
    or the evaluator raised)."""
    return {
        "problem": problem.id,
        "name": problem.name,
        "mode": mode,
        "which": which,
        "status": status,
        "message": message[:MESSAGE_CHARS],
        "total_s": round(wall_s, 4),
        "wall_s": round(wall_s, 4),
        "phases": {},
    }


def evaluation_row(problem: Problem, mode: str, which: str, result: Evaluation, wall_s: float) -> dict[str, Any]:
    row = base_row(problem, mode, which, result.status.value, result.message, wall_s)
    timing = result.timing
    row.update(
        error_type=result.error.type if result.error else None,
        total_s=result.phases.get("total", row["wall_s"]),
        phases=dict(result.phases),
        speedup=timing.speedup if timing else None,
        reference_ms=timing.reference.value(timing.statistic) if timing else None,
        candidate_ms=timing.candidate.value(timing.statistic) if timing else None,
        statistic=timing.statistic if timing else None,
        reference_cached=timing.reference_cached if timing else None,
        backends=[b.value for b in result.backends],
        sizes=result.provenance.sizes,
    )
    return row


async def evaluate_row(
    ev: Evaluator,
    problem: Problem,
    mode: str,
    which: str,
    task: Task,
    code: str,
    options: EvaluationOptions,
    complaints: list[str],
) -> dict[str, Any]:
    """One evaluation's row; a candidate that breaks the policy (the generator's fault) is a `rejected` row, not
    evaluated, and the suite goes on."""
    started = time.perf_counter()
    if complaints:
        return base_row(
            problem, mode, which, "rejected", f"the pass-through candidate breaks the policy: {complaints[0]}", 0.0
        )
    try:
        result = await ev.evaluate(task, code, options)
        return evaluation_row(problem, mode, which, result, time.perf_counter() - started)
    except TaskError as exc:
        return base_row(problem, mode, which, "task_error", str(exc), time.perf_counter() - started)
    except Exception as exc:  # the evaluator itself failed: recorded, and the suite goes on
        message = f"{type(exc).__name__}: {exc}"
        return base_row(problem, mode, which, "exception", message, time.perf_counter() - started)


class Reporter:
    """Progress on stderr: a rich bar on a terminal, one plain line per row elsewhere."""

    def __init__(self, total: int) -> None:
        self.total, self.count = total, 0
        self.bar: Any = None
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(stderr=True),
            )
            self.bar.start()
            self.job = self.bar.add_task("starting the evaluator", total=total)

    def start(self, problem: Problem, mode: str, which: str) -> None:
        if self.bar is not None:
            self.bar.update(self.job, description=f"{problem.id} {problem.name[:40]} {mode} {which}")

    def done(self, row: dict[str, Any]) -> None:
        self.count += 1
        speedup = f", speedup {row['speedup']:.3f}" if row.get("speedup") else ""
        line = (
            f"[{self.count}/{self.total}] {row['problem']} {row['name']} {row['mode']} {row['which']}: "
            f"{row['status']} in {row['total_s']:.2f} s{speedup}"
        )
        if self.bar is not None:
            self.bar.console.print(line)
            self.bar.advance(self.job)
        else:
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


async def run_suite(
    problems: list[Problem],
    modes: list[str],
    out: Path,
    settings: Settings,
    *,
    memory: bool = True,
    settle: bool = True,
    small_sizes: Callable[[Problem], dict[str, int | float] | None] | None = None,
    derive_sizes: bool = False,
    with_compile: bool = False,
) -> int:
    """Evaluate each problem's pass-through candidate in each mode, first and repeat, appending a row to `out`
    as each finishes and skipping the rows `out` already holds. `small_sizes`: each problem's SMALL_SIZES; else,
    with `derive_sizes` and candidates judged on the CPU backends, the sizes a search derives for it. Returns the
    number of rows written."""
    done = {row_key(r) for r in read_rows(out)}
    work = pending(problems, modes, done)
    if not work:
        return 0
    reporter = Reporter(sum(1 for p, m in work for w in WHICH if (p.id, m, w) not in done))
    written = 0
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists() and out.stat().st_size and not out.read_bytes().endswith(b"\n"):
        with out.open("a") as handle:  # the last line of a killed run, cut short: start on a new one
            handle.write("\n")
    try:
        async with Evaluator(settings) as ev:
            derive = derive_sizes and small_sizes is None and checks_on_cpu(ev, settings, None)
            current: tuple[int, Task, str, int | None, str, list[str]] | None = None
            for problem, mode in work:
                if current is None or current[0] != problem.id:
                    code = pass_through(problem.source())
                    task, note = make_task(problem, small_sizes(problem) if small_sizes else None), ""
                    if derive:
                        reporter.start(problem, mode, "deriving small sizes")
                        task, note = await sized_task(task, None, settings)
                    complaints = policy_problems(code, problem.source())
                    current = (problem.id, task, code, output_bytes(problem.source()), note, complaints)
                _, task, code, size, note, complaints = current
                if (problem.id, mode, "first") in done:  # resumed between the two: the reference timed again
                    with contextlib.suppress(Exception):  # a failure shows in the repeat's own row
                        await ev.evaluate(task, code, EvaluationOptions(mode=mode, with_compile=with_compile))
                for which in WHICH:
                    if (problem.id, mode, which) in done:
                        continue
                    reporter.start(problem, mode, which)
                    if settle:
                        await ev.wait_warm()  # the pool warm, as between the steps of a search
                    options = EvaluationOptions(mode=mode, with_compile=with_compile)
                    row = await evaluate_row(ev, problem, mode, which, task, code, options, complaints)
                    if note:
                        row["sizes_note"] = note
                    if size is not None:
                        row["output_bytes"] = size
                    if memory:
                        row["judge_memory"] = await ev.judge_memory()
                    with out.open("a") as handle:
                        handle.write(json.dumps(row) + "\n")
                        handle.flush()
                    written += 1
                    reporter.done(row)
    finally:
        reporter.close()
    return written


# the summary -------------------------------------------------------------------------------------
MAIN_PHASES = (
    "handover",
    "load",
    "compile",
    "wait_device",
    "reference",
    "trials",
    "judge",
    "reference_timing",
    "timing",
)
GIB = 1 << 30


def spread(values: list[float]) -> dict[str, float] | None:
    """Median, p90 (linear between order statistics) and max; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    at = 0.9 * (len(ordered) - 1)
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    p90 = ordered[low] + (ordered[high] - ordered[low]) * (at - low)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return {"median": median, "p90": p90, "max": ordered[-1]}


def is_oom(row: dict[str, Any]) -> bool:
    text = f"{row.get('message') or ''} {row.get('error_type') or ''}".lower()
    return row.get("status") != "ok" and ("out of memory" in text or "outofmemory" in text)


def peak_memory(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The judge report with the most cached bytes over the rows, and its row's problem."""
    best = None
    for row in rows:
        for entry in row.get("judge_memory") or []:
            if best is None or entry.get("cached_bytes", 0) > best["cached_bytes"]:
                best = {**entry, "problem": row["problem"]}
    return best


def summary_numbers(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per mode: counts by status, spreads of the total and main phases (first, repeat), failures, the judge's
    peak memory, problem 2's repeat time, and the targets met or missed."""
    result: dict[str, dict[str, Any]] = {}
    for mode in sorted({r["mode"] for r in rows}):
        mine = [r for r in rows if r["mode"] == mode]
        by = {w: [r for r in mine if r["which"] == w] for w in WHICH}
        counts: dict[str, int] = {}
        for row in mine:
            counts[row["status"]] = counts.get(row["status"], 0) + 1
        numbers: dict[str, Any] = {"counts": counts, "rows": len(mine)}
        for which, group in by.items():
            numbers[which] = {"total_s": spread([r["total_s"] for r in group])}
            for phase in MAIN_PHASES:
                values = [r["phases"][phase] for r in group if phase in r.get("phases", {})]
                if values:
                    numbers[which][phase] = spread(values)
        numbers["infra_error"] = counts.get("infra_error", 0)
        numbers["oom"] = sum(is_oom(r) for r in mine)
        numbers["judge_peak"] = peak_memory(mine)
        second = [r["total_s"] for r in by["repeat"] if r["problem"] == 2]
        numbers["problem2_repeat_s"] = second[-1] if second else None
        numbers["targets"] = targets(numbers)
        result[mode] = numbers
    return result


def targets(numbers: dict[str, Any]) -> list[tuple[str, float | None, float | None, bool | None]]:
    """(target, measured, limit, met) for the issue's targets; None where nothing was measured."""
    first, repeat = numbers["first"], numbers["repeat"]
    rows: list[tuple[str, float | None, float | None]] = [
        ("repeat median <= 1.5 s", repeat["total_s"]["median"] if repeat["total_s"] else None, 1.5),
        ("repeat max <= 5 s", repeat["total_s"]["max"] if repeat["total_s"] else None, 5.0),
        ("problem 2 repeat <= 4 s", numbers["problem2_repeat_s"], 4.0),
    ]
    if first["total_s"]:
        reference = first.get("reference_timing")
        limit = 2 * (reference["median"] if reference else 0.0) + 3.0
        rows.append(("first median <= 2 x reference_timing median + 3 s", first["total_s"]["median"], limit))
    rows += [("out of memory = 0", numbers["oom"], 0), ("infra_error = 0", numbers["infra_error"], 0)]
    return [(name, value, limit, None if value is None else value <= limit) for name, value, limit in rows]


def summarize(rows: list[dict[str, Any]]) -> str:
    lines = []
    for mode, numbers in summary_numbers(rows).items():
        counts = ", ".join(f"{k} {v}" for k, v in sorted(numbers["counts"].items()))
        lines += [
            f"== {mode}: {numbers['rows']} rows: {counts}",
            "phase (s)            first median / p90 / max          repeat median / p90 / max",
        ]
        for key in ("total_s", *MAIN_PHASES):
            cells = []
            for which in WHICH:
                s = numbers[which].get(key)
                cells.append(f"{s['median']:8.3f} {s['p90']:8.3f} {s['max']:8.3f}" if s else f"{'-':>26}")
            if any(numbers[w].get(key) for w in WHICH):
                lines.append(f"{key:<18} {cells[0]}     {cells[1]}")
        peak = numbers["judge_peak"]
        if peak:
            lines.append(
                f"judge memory peak: {peak['cached_bytes'] / GIB:.2f} GiB cached "
                f"({peak.get('allocated_bytes', 0) / GIB:.2f} allocated) of a {peak['budget_bytes'] / GIB:.2f} GiB "
                f"budget, {peak['judge']}, after problem {peak['problem']}"
            )
        lines.append(f"infra_error {numbers['infra_error']}, out of memory {numbers['oom']}")
        for name, value, limit, met in numbers["targets"]:
            verdict = "-" if met is None else "pass" if met else "MISS"
            shown = "-" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)
            lines.append(f"  target {name}: {shown} (limit {limit:g}) {verdict}")
    lines.append("")
    lines.append(
        f"{'id':>3} {'name':<44} {'mode':<11} {'first':<12} {'s':>7} {'ref_t':>6} "
        f"{'repeat':<12} {'s':>7} {'speedup':>7} {'out MiB':>8} {'judge GiB':>9}"
    )
    table: dict[tuple[int, str], dict[str, dict[str, Any]]] = {}
    for row in rows:
        table.setdefault((row["problem"], row["mode"]), {})[row["which"]] = row
    for (pid, mode), pair in sorted(table.items()):
        first, repeat = pair.get("first", {}), pair.get("repeat", {})
        any_row = first or repeat
        memory = max((e.get("cached_bytes", 0) for e in repeat.get("judge_memory") or []), default=None)
        lines.append(
            f"{pid:>3} {any_row['name'][:44]:<44} {mode:<11} {first.get('status', '-'):<12} "
            f"{_num(first.get('total_s'), 7, 2)} {_num(first.get('phases', {}).get('reference_timing'), 6, 2)} "
            f"{repeat.get('status', '-'):<12} {_num(repeat.get('total_s'), 7, 2)} {_num(repeat.get('speedup'), 7, 3)} "
            f"{_num(any_row['output_bytes'] / (1 << 20) if any_row.get('output_bytes') else None, 8, 1)} "
            f"{_num(memory / GIB if memory is not None else None, 9, 2)}"
        )
    return "\n".join(lines)


def _num(value: float | None, width: int, digits: int) -> str:
    return f"{value:{width}.{digits}f}" if value is not None else f"{'-':>{width}}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--level-dir", type=Path, default=DEFAULT_LEVEL, help="a KernelBench level's problem files")
    parser.add_argument("--ids", help="problem ids, e.g. 1-10,17 (default: all)")
    parser.add_argument("--modes", default="strict,kernelbench", help="comma-separated modes")
    parser.add_argument("--out", type=Path, default=Path("results.jsonl"), help="rows are appended here")
    parser.add_argument("--backend", choices=("auto", "cuda", "interpret"), default="auto")
    parser.add_argument("--home", type=Path, help="the evaluator's home (caches); default: a temporary one")
    parser.add_argument("--no-memory", action="store_true", help="do not ask for the judge's GPU memory")
    parser.add_argument("--compile", action="store_true", help="time torch.compile of each reference too")
    parser.add_argument("--back-to-back", action="store_true", help="do not wait for a warm pool before each")
    parser.add_argument(
        "--no-small-sizes",
        action="store_true",
        help="on the CPU backends, judge at the problems' own sizes rather than the small sizes a search derives",
    )
    parser.add_argument("--summarize", type=Path, metavar="RESULTS", help="print the summary of a results file")
    parser.add_argument("--referee", type=int, metavar="N", help="run kernelbench_referee.py on N problems")
    args = parser.parse_args()
    if args.summarize:
        print(summarize(read_rows(args.summarize)))
        return
    if args.referee:
        from benchmarks.kernelbench_referee import referee_main

        referee_main(["--level-dir", str(args.level_dir), "--results", str(args.out), "--count", str(args.referee)])
        return
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    ids = parse_ids(args.ids)
    problems = [p for p in read_problems(args.level_dir) if ids is None or p.id in ids]
    if not problems:
        raise SystemExit(f"no problems in {args.level_dir}" + (f" with ids {args.ids}" if ids else ""))
    home = args.home or Path(tempfile.mkdtemp(prefix="adaexplore-kernelbench-"))
    settings = Settings(home=home, executor=ExecutorConfig(backend=args.backend))
    try:
        written = anyio.run(
            lambda: run_suite(
                problems,
                modes,
                args.out,
                settings,
                memory=not args.no_memory,
                settle=not args.back_to_back,
                derive_sizes=not args.no_small_sizes,
                with_compile=args.compile,
            )
        )
    finally:
        if args.home is None:
            shutil.rmtree(home, ignore_errors=True)
    print(f"{written} rows written to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
