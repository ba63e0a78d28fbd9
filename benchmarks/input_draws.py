"""How long the judge takes to draw a KernelBench problem's inputs for every trial and for timing: one seed
after another, as it used to, and side by side in forked processes (`adaexplore/executor/worker/judge/_draws.py`),
checking on the way that both give the same values bit for bit.

    python benchmarks/input_draws.py ../shared/data/kernelbench/level2/10_*.py ../shared/data/kernelbench/level2/19_*.py

Seeds: the kernelbench protocol's five trial seeds, the timing seed and the first trial's again (the task's
facts), as the judge draws them on a GPU. Draws are on the CPU at the task's full sizes; one seed's values are
held at a time besides those the side-by-side draw has not handed back yet.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import torch

from adaexplore.executor.worker.judge._draws import DrawReport, draw_side_by_side
from adaexplore.executor.worker.task._taskrun import derive_seeds, draw_args, load_task_module, tensors_in


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.stride() == b.stride() and torch.equal(a, b)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def measure(path: Path) -> dict[str, Any]:
    module = load_task_module(str(path), None)
    trials = derive_seeds(42, 5)
    seeds = [*trials, 42, trials[0]]
    start = time.perf_counter()
    first = draw_args(module, "get_inputs", seeds[0])
    gib = sum(t.untyped_storage().nbytes() for t in tensors_in(first)) / 2**30
    for seed in seeds[1:]:
        draw_args(module, "get_inputs", seed)
    serial_s = time.perf_counter() - start
    report = DrawReport()
    start = time.perf_counter()
    first = draw_args(module, "get_inputs", seeds[0])
    drawing = draw_side_by_side(module, first, time.perf_counter() - start, seeds[1:], report)
    got: dict[int, Any] = {}
    if drawing is not None:
        for index, values in drawing.collect():
            got[index + 1] = values
    side_s = time.perf_counter() - start
    equal = all(_same(values, draw_args(module, "get_inputs", seeds[index])) for index, values in got.items())
    return {
        "problem": path.stem[:40],
        "gib": gib,
        "serial_s": serial_s,
        "side_s": side_s,
        "in_processes": report.in_processes,
        "processes": report.processes,
        "equal": equal,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="+", type=Path)
    args = parser.parse_args()
    print(f"{'problem':40s} {'GiB/seed':>8s} {'serial s':>9s} {'side s':>7s} {'procs':>5s} {'seeds':>5s} equal")
    for path in args.problems:
        row = measure(path)
        print(
            f"{row['problem']:40s} {row['gib']:8.2f} {row['serial_s']:9.2f} {row['side_s']:7.2f} "
            f"{row['processes']:5d} {row['in_processes']:5d} {row['equal']}",
            flush=True,
        )
        if not row["equal"]:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
