"""Judge this corpus on the CPU path, as a search on a machine without a GPU judges it: each kernel under
level1/, level2/ and level3/ in strict mode, compiled for sm_90 and run in the interpreter at the small sizes
`create_task` derives for its problem, one row per kernel in cpu_verdicts.jsonl with the estimate it got. These
are the verdicts and estimates that the GPU's (truth.jsonl, from measure.py) are compared to.

    python benchmarks/gpu_truth/verify_cpu.py                    # every kernel; resumes where it stopped
    python benchmarks/gpu_truth/verify_cpu.py --only level3/,level2/47/
    python benchmarks/gpu_truth/verify_cpu.py --kernelbench DIR  # KernelBench's levels elsewhere
    python benchmarks/gpu_truth/verify_cpu.py --retry-timeouts   # judge again the kernels that timed out (a loaded
                                                                 # machine times honest kernels out)
    python benchmarks/gpu_truth/verify_cpu.py --again --only level1/2/  # judge again though the code is the same
                                                                 # (the evaluator changed since)

Each row: `level`, `problem`, `kernel` (its path here), `cpu_status`, `message` (of a kernel that was not ok),
`estimate` (the estimate's ms, the reference's estimated ms, speedup, sol_fraction, exact, summary; None where
the kernel got none), `sizes` (the derived small sizes), `seconds` and `code_hash`, so that a kernel edited since
is judged again. Kernels are judged one at a time: the interpreter is slow, and the machine is usually shared.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import anyio

from adaexplore.config import Settings
from adaexplore.executor import (
    EvaluationOptions,
    Evaluator,
    code_hash,
    derive_small_sizes,
    task_from_source,
    with_small_sizes,
)

HERE = Path(__file__).resolve().parent
KERNELBENCH = HERE.parents[2] / "shared" / "data" / "kernelbench"


def kernels(kernelbench: Path, only: str | None, skip: str | None) -> list[tuple[int, Path, Path]]:
    """(level, task file, kernel file) for each kernel whose path holds one of the comma-separated parts of
    `only` (all where None) and not `skip`."""
    parts = [part for part in (only or "").split(",") if part]
    found = []
    for level in (1, 2, 3):
        root = HERE / f"level{level}"
        if not root.is_dir():
            continue
        for folder in sorted(root.iterdir(), key=lambda p: int(p.name)):
            chosen = [
                k
                for k in sorted(folder.glob("*.py"))
                if (not parts or any(p in str(k.relative_to(HERE)) for p in parts))
                and (skip is None or skip not in str(k.relative_to(HERE)))
            ]
            if not chosen:
                continue
            task = next(kernelbench.glob(f"level{level}/{folder.name}_*.py"), None)
            if task is None:
                sys.exit(f"no KernelBench problem {folder.name} in {kernelbench / f'level{level}'}: give --kernelbench")
            found.extend((level, task, kernel) for kernel in chosen)
    return found


def estimate_row(evaluation) -> dict[str, object] | None:  # type: ignore[no-untyped-def]
    e = evaluation.estimate
    if e is None:
        return None
    return {
        "ms": round(e.ms, 5),
        "reference_ms": round(e.reference_ms, 5),
        "speedup": round(e.speedup, 4),
        "sol_fraction": round(e.sol_fraction, 4) if e.sol_fraction is not None else None,
        "exact": e.exact,
        "summary": e.summary[:300],
    }


async def main(
    kernelbench: Path, only: str | None, skip: str | None, out: Path, retry_timeouts: bool, again: bool
) -> None:
    rows: dict[tuple[str, str], dict[str, object]] = {}
    if out.is_file():
        rows = {
            (r["kernel"], r["code_hash"]): r
            for r in map(json.loads, filter(str.strip, out.read_text().splitlines()))
            if (HERE / r["kernel"]).is_file()  # a kernel deleted since loses its row
        }
    # a kernel edited since its verdict, or retried, is judged again and its new row replaces the old
    done = {key for key, row in rows.items() if not (again or (retry_timeouts and row["cpu_status"] == "timeout"))}
    todo = [
        (level, task, kernel, (str(kernel.relative_to(HERE)), code_hash(kernel.read_text())))
        for level, task, kernel in kernels(kernelbench, only, skip)
    ]
    todo = [item for item in todo if item[3] not in done]
    settings = Settings()
    tasks: dict[Path, tuple[object, dict[str, int | float]]] = {}
    began = time.monotonic()
    print(f"{len(todo)} kernels to judge", flush=True)
    async with Evaluator(settings) as evaluator:
        for n, (level, task_path, kernel_path, key) in enumerate(todo, 1):
            if task_path not in tasks:
                source = task_path.read_text()
                derived = await derive_small_sizes(source, settings=settings)
                sizes = derived.sizes or {}
                tasks[task_path] = (
                    task_from_source(with_small_sizes(source, sizes, "derived"), name=task_path.stem),
                    sizes,
                )
            task, sizes = tasks[task_path]
            started = time.monotonic()
            evaluation = await evaluator.evaluate(task, kernel_path.read_text(), EvaluationOptions(mode="strict"))  # type: ignore[arg-type]
            for old in [k for k in rows if k[0] == key[0]]:
                del rows[old]
            rows[key] = {
                "level": level,
                "problem": task_path.name,
                "kernel": key[0],
                "cpu_status": evaluation.status.value,
                "message": None if evaluation.status.value == "ok" else evaluation.message[:400],
                "estimate": estimate_row(evaluation),
                "sizes": sizes,
                "seconds": round(time.monotonic() - started, 1),
                "code_hash": key[1],
            }
            out.write_text("".join(json.dumps(r) + "\n" for r in rows.values()))
            est = rows[key]["estimate"]
            print(
                f"[{n}/{len(todo)} {time.monotonic() - began:.0f}s] {key[0]}: {evaluation.status.value} "
                f"{rows[key]['seconds']}s est {est['ms'] if isinstance(est, dict) else '-'} ms"
                + ("" if evaluation.status.value == "ok" else f"  {evaluation.message[:160]}"),
                flush=True,
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="judge the kernels whose path holds this text (or one of several, a,b)")
    parser.add_argument("--skip", help="leave out the kernels whose path holds this text")
    parser.add_argument("--out", type=Path, default=HERE / "cpu_verdicts.jsonl")
    parser.add_argument("--kernelbench", type=Path, default=KERNELBENCH, help="the KernelBench folder")
    parser.add_argument("--retry-timeouts", action="store_true", help="judge again the kernels that timed out")
    parser.add_argument("--again", action="store_true", help="judge the chosen kernels again, whatever their rows")
    args = parser.parse_args()
    anyio.run(main, args.kernelbench, args.only, args.skip, args.out, args.retry_timeouts, args.again)
