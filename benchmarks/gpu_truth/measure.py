"""Measure this corpus on a GPU: every kernel under level1/ and level2/ in strict mode at the task's full sizes,
one row per kernel in truth.jsonl (the schema of the shared corpus, `../shared/data/gpu-truth/`), with the GPU's
share of the speed of light beside it.

    python benchmarks/gpu_truth/measure.py                  # on a GPU machine; resumes where it stopped
    python benchmarks/gpu_truth/measure.py --only level2/12  # some kernels

Each row: `level`, `problem` (the KernelBench file name), `kernel` (its path here), `h200_status`, `strict_speedup`
(None unless ok), `kernel_ms` and `eager_ms` (medians of strict timing), `sol_fraction`, the `message` of a kernel
that was not ok, and `code_hash`, so that a kernel edited since is measured again. `provenance.json` records the
machine and versions of the last run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import anyio

from adaexplore.config import Settings
from adaexplore.executor import EvaluationOptions, Evaluator, code_hash, load_task

HERE = Path(__file__).resolve().parent
KERNELBENCH = HERE.parents[2] / "shared" / "data" / "kernelbench"


def kernels(only: str | None) -> list[tuple[int, Path, Path]]:
    """(level, task file, kernel file) for each kernel of the corpus."""
    found = []
    for level in (1, 2):
        for folder in sorted((HERE / f"level{level}").iterdir(), key=lambda p: int(p.name)):
            task = next(KERNELBENCH.glob(f"level{level}/{folder.name}_*.py"), None)
            if task is None:
                sys.exit(f"no KernelBench problem {folder.name} in {KERNELBENCH / f'level{level}'}")
            for kernel in sorted(folder.glob("*.py")):
                if only is None or only in str(kernel.relative_to(HERE)):
                    found.append((level, task, kernel))
    return found


async def main(only: str | None, out: Path) -> None:
    done = {}
    if out.is_file():
        for line in out.read_text().splitlines():
            row = json.loads(line)
            done[(row["kernel"], row["code_hash"])] = row
    todo = kernels(only)
    async with Evaluator(Settings()) as evaluator:
        environment = evaluator.environment
        assert environment is not None
        if not environment.has_gpu:
            sys.exit("the corpus is measured on a GPU; this machine has none")
        rows = dict(done)
        for i, (level, task_path, kernel_path) in enumerate(todo, 1):
            code = kernel_path.read_text()
            name = str(kernel_path.relative_to(HERE))
            key = (name, code_hash(code))
            if key in done:
                continue
            evaluation = await evaluator.evaluate(load_task(task_path), code, EvaluationOptions(mode="strict"))
            timing = evaluation.timing if evaluation.status.value == "ok" else None
            rows[key] = {
                "level": level,
                "problem": task_path.name,
                "kernel": name,
                "h200_status": evaluation.status.value,
                "strict_speedup": round(timing.speedup, 4) if timing else None,
                "kernel_ms": round(timing.candidate.median_ms, 4) if timing else None,
                "eager_ms": round(timing.reference.median_ms, 4) if timing else None,
                "sol_fraction": round(evaluation.sol_fraction, 4) if evaluation.sol_fraction is not None else None,
                "message": None if timing else evaluation.message[:400],
                "code_hash": key[1],
            }
            print(f"[{i}/{len(todo)}] {name}: {evaluation.status.value} {rows[key]['strict_speedup']}", flush=True)
            out.write_text("".join(json.dumps(r) + "\n" for r in rows.values()))
        provenance = evaluation.provenance.model_dump() if todo else {}
        (out.parent / "provenance.json").write_text(
            json.dumps({k: provenance.get(k) for k in ("gpu", "driver", "cuda", "torch", "triton", "python")}, indent=2)
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="measure the kernels whose path holds this text")
    parser.add_argument("--out", type=Path, default=HERE / "truth.jsonl")
    args = parser.parse_args()
    anyio.run(main, args.only, args.out)
