"""What the sandbox costs: a worker's start, and a warm evaluation, with each sandbox kind and without one.

    python benchmarks/sandbox_bench.py                       # every kind this machine offers, 5 evaluations each
    python benchmarks/sandbox_bench.py --evals 9 --json sandbox.json

A worker's start is the `handover` phase of an evaluation made with no worker kept ready (so each
evaluation starts its own); a warm evaluation is one made once the spare workers are ready, as between the
steps of a search. Targets: at most 0.5 s added to a start and 50 ms to a warm evaluation.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adaexplore.config import ExecutorConfig, Settings  # noqa: E402
from adaexplore.errors import ConfigError  # noqa: E402
from adaexplore.executor import Evaluator, Status, load_task  # noqa: E402


async def _measure(kind: str, task_path: Path, kernel: str, evals: int, home: Path) -> dict[str, object]:
    task = load_task(task_path)
    starts: list[float] = []
    warm: list[float] = []
    detail = None
    cold = Settings(home=home, executor=ExecutorConfig(sandbox=kind, warm_workers=0))  # type: ignore[arg-type]
    async with Evaluator(cold) as evaluator:
        await evaluator.wait_warm()
        for _ in range(evals):
            result = await evaluator.evaluate(task, kernel)
            if result.status is not Status.ok:
                raise SystemExit(f"{kind}: the kernel failed: {result.message}")
            # on the CPU an evaluation starts two workers (compile, then interpret): one start each
            starts.append(result.phases["handover"] / len(result.backends))
            detail = result.provenance.sandbox_detail
    hot = Settings(home=home, executor=ExecutorConfig(sandbox=kind, warm_workers=1))  # type: ignore[arg-type]
    async with Evaluator(hot) as evaluator:
        await evaluator.evaluate(task, kernel)  # Triton's compile of the kernel happens once per worker anyway
        for _ in range(evals):
            await evaluator.wait_warm()
            started = time.perf_counter()
            result = await evaluator.evaluate(task, kernel)
            warm.append(time.perf_counter() - started)
    return {
        "kind": kind,
        "detail": detail,
        "start_s": statistics.median(starts),
        "warm_s": statistics.median(warm),
        "starts": starts,
        "warm": warm,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", type=Path, default=ROOT / "examples/tasks/row_softmax.py")
    parser.add_argument("--kernel", type=Path, default=ROOT / "examples/kernels/row_softmax/correct.py")
    parser.add_argument("--evals", type=int, default=5)
    parser.add_argument("--kinds", default="none,bwrap,landlock")
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    kernel = options.kernel.read_text()
    rows = []
    with tempfile.TemporaryDirectory(prefix="adaexplore-sandbox-bench-") as home:
        for kind in options.kinds.split(","):
            try:
                rows.append(await _measure(kind, options.task, kernel, options.evals, Path(home)))
            except ConfigError as exc:
                print(f"{kind}: not available here ({exc})", file=sys.stderr)
    base = next((r for r in rows if r["kind"] == "none"), None)
    print(f"{'sandbox':18} {'worker start':>14} {'added':>9} {'warm evaluation':>16} {'added':>9}")
    for row in rows:
        added_start = row["start_s"] - base["start_s"] if base else float("nan")  # type: ignore[operator]
        added_warm = row["warm_s"] - base["warm_s"] if base else float("nan")  # type: ignore[operator]
        print(
            f"{row['kind']:18} {row['start_s']:13.3f}s {added_start * 1000:+8.0f}ms "
            f"{row['warm_s']:15.3f}s {added_warm * 1000:+8.0f}ms"
        )
    if options.json:
        options.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    anyio.run(main)
