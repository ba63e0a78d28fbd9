"""What a GPU says of the fixed-grid kernels that the CPU path's full-coverage check finds (on an H200, say).

Each kernel of `tests/executor/data/fixed_grid/` launches a grid of fixed size that covers its Level 2 problem's
output at the small sizes the CPU path checks, and a small part of it at the problem's full sizes. Without a GPU
the compile check finds the elements it never writes (`mismatch`, with where); on a GPU the trials run at the full
sizes, and this script records what they say, so the two can be held side by side (without a GPU it records the CPU
path's verdicts, at the small sizes `adaexplore profile` derives). Run it where a GPU is visible:

    python3 benchmarks/coverage_gpu.py --kernelbench DIR [--out DIR]

`DIR` holds KernelBench's `level2/` problems; results go to `--out` (default `$OUT`, else `./coverage_gpu_out`) as
`coverage_gpu.jsonl`, one line per kernel, and a run resumes where it stopped. The table it prints last says, per
kernel, the GPU's status and the start of its message; every one should be `mismatch`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "tests" / "executor" / "data" / "fixed_grid"


def _problem(kernelbench: Path, kernel: Path) -> Path | None:
    number = kernel.stem.split("_")[1]  # level2_<number>_<kind>
    found = sorted((kernelbench / "level2").glob(f"{number}_*.py"))
    return found[0] if found else None


async def _task(problem: Path, on_gpu: bool):  # type: ignore[no-untyped-def]
    """The problem as a task: at its own sizes on a GPU; without one, at the small sizes a search derives, as
    `adaexplore profile` judges it there (the compile check then follows the full sizes)."""
    from adaexplore.executor import derive_small_sizes, load_task, task_from_source, with_small_sizes

    if on_gpu:
        return load_task(str(problem))
    source = problem.read_text()
    derived = await derive_small_sizes(source)
    return task_from_source(with_small_sizes(source, derived.sizes or {}, "derived"), name=problem.name)


async def _judge(kernelbench: Path, out: Path) -> list[dict]:
    from adaexplore.executor import EvaluationOptions, Evaluator

    done = {}
    if out.is_file():
        done = {row["kernel"]: row for row in map(json.loads, out.read_text().splitlines())}
    rows = []
    async with Evaluator() as evaluator:
        await evaluator.ready()
        on_gpu = evaluator.environment is not None and evaluator.environment.has_gpu
        for kernel in sorted(KERNELS.glob("level2_*.py")):
            if kernel.name in done:
                rows.append(done[kernel.name])
                continue
            problem = _problem(kernelbench, kernel)
            if problem is None:
                print(f"{kernel.name}: its problem is not in {kernelbench}/level2", file=sys.stderr)
                continue
            started = time.perf_counter()
            task = await _task(problem, on_gpu)
            result = await evaluator.evaluate(task, kernel.read_text(), EvaluationOptions(mode="strict"))
            row = {
                "kernel": kernel.name,
                "problem": problem.name,
                "status": result.status.value,
                "backends": [b.value for b in result.backends],
                "message": result.message[:400],
                "seconds": round(time.perf_counter() - started, 1),
            }
            with out.open("a") as file:
                file.write(json.dumps(row) + "\n")
            rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernelbench", type=Path, required=True, help="the folder that holds level2/")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "coverage_gpu_out")))
    args = parser.parse_args()
    if not (args.kernelbench / "level2").is_dir():
        sys.exit(f"no level2/ in {args.kernelbench}: pass the folder of KernelBench's problems")
    args.out.mkdir(parents=True, exist_ok=True)
    rows = anyio.run(_judge, args.kernelbench, args.out / "coverage_gpu.jsonl")
    print(f"{'kernel':36} {'backends':14} {'status':10} {'s':>6}  message")
    for row in rows:
        print(
            f"{row['kernel']:36} {','.join(row['backends']):14} {row['status']:10} {row['seconds']:6.1f}  "
            f"{row['message'][:100]}"
        )
    agree = sum(row["status"] == "mismatch" for row in rows)
    print(f"{agree} of {len(rows)} fixed-grid kernels are a mismatch here (all should be)")


if __name__ == "__main__":
    main()
