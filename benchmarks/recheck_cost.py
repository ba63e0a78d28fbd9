"""What rechecking timed calls costs: the same candidates evaluated with `recheck_reps` at each of several
values and in each protocol, printing the speedup, the timing and judge phases and how many calls were
rechecked. On a GPU; run from the repository root.

    python benchmarks/recheck_cost.py                                   # 3 and 44 rechecks, strict and kernelbench
    python benchmarks/recheck_cost.py --reps 44 --modes strict --evals 5 --case TASK KERNEL
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import anyio

from adaexplore.config import ExecutorConfig, Settings
from adaexplore.executor import EvaluationOptions, Evaluator, load_task

ROOT = Path(__file__).resolve().parents[1]
CASES = [
    (ROOT / "examples/tasks/gemm_epilogue.py", ROOT / "examples/kernels/gemm_epilogue/correct.py"),
    (
        ROOT.parent / "shared/data/kernelbench/level2/17_Conv2d_InstanceNorm_Divide.py",
        ROOT.parent / "shared/data/gpu-truth/level2/17/best.py",
    ),
]


async def main(args: argparse.Namespace) -> None:
    cases = [tuple(Path(p) for p in case) for case in args.case] or [c for c in CASES if c[0].exists()]
    print("rechecks mode task eval status speedup timing_s judge_s rechecked wall_s", flush=True)
    for reps in args.reps:
        for mode in args.modes:
            settings = Settings(home=Path(tempfile.mkdtemp()), executor=ExecutorConfig(recheck_reps=reps))
            async with Evaluator(settings) as ev:
                for task_path, kernel in cases:
                    task, code = load_task(task_path), kernel.read_text()
                    for index in range(args.evals):
                        start = time.perf_counter()
                        result = await ev.evaluate(task, code, EvaluationOptions(mode=mode))
                        wall = time.perf_counter() - start
                        speedup = f"{result.timing.speedup:.4f}" if result.timing else "-"
                        rechecked = len(result.correctness.rechecks) if result.correctness else 0
                        print(
                            reps, mode, task_path.stem[:24], index, result.status.value, speedup,
                            result.phases.get("timing"), result.phases.get("judge"), rechecked, f"{wall:.1f}",
                            flush=True,
                        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=lambda s: [int(x) for x in s.split(",")], default=[3, 44])
    parser.add_argument("--modes", type=lambda s: s.split(","), default=["strict", "kernelbench"])
    parser.add_argument("--evals", type=int, default=3)
    parser.add_argument("--case", nargs=2, action="append", default=[], metavar=("TASK", "KERNEL"))
    anyio.run(main, parser.parse_args())
