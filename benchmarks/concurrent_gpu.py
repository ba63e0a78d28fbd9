"""Evaluations under way at once on one GPU: (task, kernel) pairs evaluated N at a time in strict mode by one
evaluator, as `explore --parallel K`, `bench` and concurrent MCP calls run them. Prints each verdict as it comes,
then a table: per kernel its status, attempts, seconds, the time it waited for GPU memory and its speedup, and,
where a run one at a time (`--parallel 1`) is on record, whether its verdict is the same.

    python3 benchmarks/concurrent_gpu.py --kernelbench DIR --parallel 4 benchmarks/gpu_truth/level2/4/*.py
    python3 benchmarks/concurrent_gpu.py --kernelbench DIR --parallel 1 benchmarks/gpu_truth/level2/4/*.py

A kernel is a file under a folder `level{L}/{P}/` (its task is KernelBench problem P of level L, found in
`--kernelbench DIR/level{L}/{P}_*.py`), or `TASK::KERNEL`. Rows go to `$OUT/concurrent_gpu.jsonl` (or `--out`),
one per kernel, parallelism and code; a run resumes where the last stopped, and stops starting evaluations after
`--deadline` seconds. Healthy: no `infra_error`, one judge process started (none died or was replaced), no
reference built ahead that failed, and the verdicts of one at a time.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from adaexplore.config import Settings
from adaexplore.errors import EvaluatorError, TaskError
from adaexplore.executor import EvaluationOptions, Evaluator, code_hash, load_task


def pairs(items: list[str], kernelbench: Path | None) -> list[tuple[Path, Path]]:
    """(task file, kernel file) for each argument."""
    found = []
    for item in items:
        if "::" in item:
            task, kernel = item.split("::", 1)
            found.append((Path(task), Path(kernel)))
            continue
        kernel = Path(item)
        level, problem = kernel.parent.parent.name, kernel.parent.name
        if kernelbench is None or not level.startswith("level") or not problem.isdigit():
            sys.exit(f"{item}: give --kernelbench DIR and a kernel under level{{L}}/{{P}}/, or TASK::KERNEL")
        task = next((kernelbench / level).glob(f"{problem}_*.py"), None)
        if task is None:
            sys.exit(f"no KernelBench problem {problem} in {kernelbench / level}")
        found.append((task, kernel))
    return found


class Warnings(logging.Handler):
    """The evaluator's warnings (a reference that could not be built ahead, say), kept to count them."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage()[:300])


def row(kernel: str, code: str, parallel: int, evaluation: Any, seconds: float) -> dict[str, Any]:
    """A verdict's row; `evaluation` is the exception where `evaluate` raised (the task's error, the evaluator's)."""
    failed = isinstance(evaluation, Exception)
    timing = None if failed or evaluation.status.value != "ok" else evaluation.timing
    return {
        "kernel": kernel,
        "code_hash": code_hash(code),
        "parallel": parallel,
        "status": ("task_error" if isinstance(evaluation, TaskError) else "raised")
        if failed
        else evaluation.status.value,
        "attempts": 0 if failed else evaluation.provenance.attempts,
        "seconds": round(seconds, 1),
        "wait_memory_s": 0.0 if failed else round(evaluation.phases.get("wait_memory", 0.0), 2),
        "speedup": round(timing.speedup, 3) if timing else None,
        "message": (str(evaluation) if failed else evaluation.message)[:600],
    }


async def main(args: argparse.Namespace) -> None:
    out: Path = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    rows: dict[tuple[str, str, int], dict[str, Any]] = {}
    if out.is_file():
        for line in out.read_text().splitlines():
            r = json.loads(line)
            rows[(r["kernel"], r["code_hash"], r["parallel"])] = r
    todo = []
    for task_path, kernel_path in pairs(args.kernels, args.kernelbench):
        code = kernel_path.read_text()
        if (str(kernel_path), code_hash(code), args.parallel) not in rows:
            todo.append((task_path, kernel_path, code))
    # one kernel of each task in turn: evaluations of several tasks are under way at once, as in a corpus
    by_task: dict[Path, list[tuple[Path, Path, str]]] = {}
    for item in todo:
        by_task.setdefault(item[0], []).append(item)
    todo = [
        group[i]
        for i in range(max(map(len, by_task.values()), default=0))
        for group in by_task.values()
        if i < len(group)
    ]
    warnings = Warnings()
    logging.getLogger("adaexplore").addHandler(warnings)
    started = time.monotonic()
    gate = anyio.Semaphore(args.parallel)
    judges = 0
    async with Evaluator(Settings()) as evaluator:
        await evaluator.ready()
        assert evaluator.environment is not None
        if not evaluator.environment.has_gpu:
            print("no GPU here: the CPU backends judge at small sizes (a check of this script, not the measurement)")

        async def one(task_path: Path, kernel_path: Path, code: str) -> None:
            async with gate:
                if time.monotonic() - started > args.deadline:
                    return  # the next run does it
                begun = time.monotonic()
                evaluation: Any
                try:
                    evaluation = await evaluator.evaluate(load_task(task_path), code, EvaluationOptions(mode="strict"))
                except (TaskError, EvaluatorError) as exc:  # the task's fault, or the evaluator's: a row too
                    evaluation = exc
            r = row(str(kernel_path), code, args.parallel, evaluation, time.monotonic() - begun)
            rows[(r["kernel"], r["code_hash"], r["parallel"])] = r
            out.write_text("".join(json.dumps(x) + "\n" for x in rows.values()))
            detail = f"{r['speedup']}x" if r["speedup"] is not None else r["message"][:300]
            print(
                f"===== {r['kernel']}: {r['status']} (attempts {r['attempts']}, {r['seconds']} s) {detail}", flush=True
            )

        async with anyio.create_task_group() as group:
            for task_path, kernel_path, code in todo:
                group.start_soon(one, task_path, kernel_path, code)
        assert evaluator.lanes is not None
        judges = sum(judge.generation for judge in evaluator.lanes.judges.values())
    summarize(rows, args, judges, warnings.messages, len(todo))


def summarize(
    rows: dict[tuple[str, str, int], dict[str, Any]], args: argparse.Namespace, judges: int, warned: list[str], ran: int
) -> None:
    mine = [r for (_, _, p), r in rows.items() if p == args.parallel]
    alone = {(r["kernel"], r["code_hash"]): r for (_, _, p), r in rows.items() if p == 1}
    print(f"\n{'kernel':52} {'status':13} {'att':>3} {'secs':>6} {'wait':>6} {'speedup':>8}  one at a time")
    differ = 0
    for r in sorted(mine, key=lambda r: r["kernel"]):
        other = alone.get((r["kernel"], r["code_hash"]))
        same = "" if other is None or args.parallel == 1 else other["status"]
        if other is not None and other["status"] != r["status"] and args.parallel != 1:
            same += "  DIFFERENT"
            differ += 1
        speed = f"{r['speedup']:.3f}" if r["speedup"] is not None else "-"
        print(
            f"{r['kernel'][-52:]:52} {r['status']:13} {r['attempts']:>3} {r['seconds']:>6.1f} "
            f"{r['wait_memory_s']:>6.1f} {speed:>8}  {same}"
        )
    statuses: dict[str, int] = {}
    for r in mine:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    retried = sum(1 for r in mine if r["attempts"] > 1)
    print(
        f"\n{len(mine)} verdicts at {args.parallel} at a time ({ran} evaluated in this run): "
        + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
        + f"; {retried} retried; judge processes started in this run: {judges}; "
        f"warnings: {len(warned)}; verdicts unlike one at a time: {differ}"
    )
    for message in warned[:5]:
        print(f"warning: {message}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kernels", nargs="+", help="kernel files under level{L}/{P}/, or TASK::KERNEL")
    parser.add_argument("--kernelbench", type=Path, help="the KernelBench problems: DIR/level{L}/{P}_*.py")
    parser.add_argument("--parallel", type=int, default=4, help="evaluations under way at once")
    parser.add_argument("--deadline", type=float, default=420.0, help="seconds after which no evaluation starts")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")) / "concurrent_gpu.jsonl")
    arguments = parser.parse_args()
    if arguments.parallel < 1:
        sys.exit("--parallel takes 1 or more")
    anyio.run(main, arguments)
