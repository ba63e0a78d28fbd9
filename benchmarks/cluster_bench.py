"""Evaluations per minute through a Dask cluster, with 1 and then 2 workers: a real `distributed.LocalCluster`
whose worker processes load adaexplore's plugin (`--preload adaexplore.cluster`, as `dask worker` does), and
the searching side's cluster evaluator sending the example kernels as Dask tasks, as many at once as there
are workers.

From the repository root, after `./install.sh --dev` (which installs Dask distributed, the `cluster` extra):

    .venv/bin/python benchmarks/cluster_bench.py --backend compile      # 1 and 2 workers, 12 evaluations each
    .venv/bin/python benchmarks/cluster_bench.py --backend interpret
    .venv/bin/python benchmarks/cluster_bench.py                        # auto: on a CPU, compile then interpret
    .venv/bin/python benchmarks/cluster_bench.py --workers 1,2,4 --evals 24 --json rows.json

Issue 25's target, on CPU backends: at least 1.8x the evaluations per minute with 2 workers as with 1 (the
"vs first" column). Each evaluation is a correct example kernel (made unique by a comment, so nothing is reused)
on its task. Before the clock starts, every worker's evaluator has started and every task has been evaluated
once on every worker (a task's first evaluation on a worker also loads it and times its reference there, which
would otherwise weigh on the larger clusters, whose workers each meet every task for the first time).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from distributed import LocalCluster  # noqa: E402

from adaexplore.cluster import open_evaluator  # noqa: E402
from adaexplore.config import ExecutorConfig, Settings  # noqa: E402
from adaexplore.executor import load_task  # noqa: E402

EXAMPLES = ROOT / "examples"
PAIRS = ["elementwise_chain", "row_softmax", "layernorm", "sum_reduction", "gemm_epilogue", "mlp"]


async def throughput(address: str, home: Path, backend: str, workers: int, evals: int) -> dict[str, object]:
    settings = Settings(home=home, executor=ExecutorConfig(cluster=address, backend=backend))  # type: ignore[arg-type]
    jobs = [
        (load_task(EXAMPLES / "tasks" / f"{name}.py"), (EXAMPLES / "kernels" / name / "correct.py").read_text())
        for name in PAIRS
    ]
    statuses: list[str] = []
    seconds: list[float] = []
    async with open_evaluator(settings) as evaluator:
        await evaluator.ready()
        # warm: each task `workers` times at once, which Dask spreads one to each idle worker
        for k, (task, code) in enumerate(jobs):
            async with anyio.create_task_group() as tg:
                for w in range(workers):
                    tg.start_soon(evaluator.evaluate, task, f"{code}\n# warm-up {k}.{w}\n")
        warmed = sorted((await evaluator._client.run(_served)).values())
        queue = iter(itertools.islice(itertools.cycle(jobs), evals))
        counter = itertools.count()

        async def drain() -> None:
            for task, code in queue:
                started = time.perf_counter()
                result = await evaluator.evaluate(task, f"{code}\n# evaluation {next(counter)}\n")
                seconds.append(time.perf_counter() - started)
                statuses.append(result.status.value)

        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(workers):
                tg.start_soon(drain)
        elapsed = time.perf_counter() - started
    return {
        "workers": workers,
        "evaluations": len(statuses),
        "ok": statuses.count("ok"),
        "elapsed_s": round(elapsed, 2),
        "per_minute": round(60 * len(statuses) / elapsed, 2),
        "median_s": round(statistics.median(seconds), 2),
        "warm_up_per_worker": warmed,  # len(PAIRS) each when every worker met every task before the clock
    }


def _served(dask_worker: object) -> int:
    """The requests a worker's plugin has answered."""
    return dask_worker.plugins["adaexplore"].host.served  # type: ignore[attr-defined,no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", default="1,2", help="cluster sizes to measure, comma-separated")
    parser.add_argument("--evals", type=int, default=12, help="evaluations per cluster size")
    parser.add_argument("--backend", default="auto", choices=["auto", "compile", "interpret"])
    parser.add_argument("--json", type=Path, help="write the rows here too")
    args = parser.parse_args()
    rows = []
    for workers in (int(w) for w in args.workers.split(",")):
        home = Path(tempfile.mkdtemp(prefix="adaexplore-cluster-bench-"))
        with LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            preload=["adaexplore.cluster"],
            env={"ADAEXPLORE_HOME": str(home / "worker")},
            dashboard_address=":0",  # a free port: None still serves HTTP on 8787, and a dashboard may hold it
        ) as cluster:
            row = anyio.run(throughput, cluster.scheduler_address, home, args.backend, workers, args.evals)
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    base = rows[0]["per_minute"]
    print(f"{'workers':>8} {'evals':>6} {'ok':>4} {'seconds':>8} {'per min':>8} {'median s':>9} {'vs first':>9}")
    for row in rows:
        ratio = row["per_minute"] / base  # type: ignore[operator]
        print(
            f"{row['workers']:>8} {row['evaluations']:>6} {row['ok']:>4} {row['elapsed_s']:>8} "
            f"{row['per_minute']:>8} {row['median_s']:>9} {ratio:>8.2f}x"
        )


if __name__ == "__main__":
    main()
