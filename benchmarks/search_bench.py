"""Latency of one search decision, store included: `select_uct` followed by `expand_node`, on runs of
10^3, 10^4 and 10^5 nodes grown by the search itself (with scripted verdicts).

From the repository root, after `./install.sh --dev` (which installs psycopg, the `postgres` extra):

    .venv/bin/python benchmarks/search_bench.py                 # SQLite: 1000, 10000 and 100000 nodes
    .venv/bin/python benchmarks/search_bench.py --sizes 1000    # some of them

On PostgreSQL (issue 25's target: p99 of select_uct + expand_node at most 10 ms at 10^4 nodes, the server on
the same machine), a throwaway server of `.ci/postgres` (Debian's postgresql binaries, `.ci/postgres install`
where they are missing; it listens on a Unix socket in a new temporary folder only, without fsync):

    server=$(.ci/postgres start)    # two lines: the server's folder, then its URL
    .venv/bin/python benchmarks/search_bench.py --sizes 10000 --db "$(tail -n 1 <<<"$server")"
    .ci/postgres stop "$(head -n 1 <<<"$server")"

or any server's `--db postgresql://USER:PASSWORD@HOST:5432/DATABASE`. Each size is grown in a new SQLite file,
or as a new run in the PostgreSQL database `--db` names (one the benchmark may fill: it adds a task "bench" and
a run per size, and removes nothing).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adaexplore.config import SearchConfig, Settings  # noqa: E402
from adaexplore.executor import Status, task_from_source  # noqa: E402
from adaexplore.search import reward, select  # noqa: E402
from adaexplore.store import NewEvaluation, open_store  # noqa: E402
from adaexplore.tools import ExpandNodeRequest, SelectUctRequest, Services, expand_node, select_uct  # noqa: E402
from tests.fakes import make_evaluation  # noqa: E402

TASK = (ROOT / "tests" / "executor" / "data" / "scale_relu_task.py").read_text()
KERNEL = (ROOT / "tests" / "executor" / "data" / "scale_relu_kernel.py").read_text()
VERDICTS = [("compile_error", None), ("mismatch", None), ("ok", 0.8), ("ok", 1.3), ("ok", 2.1)]


def grow(svc: Services, nodes: int, seed: int, total_steps: int | None = None) -> str:
    """A run of `nodes` nodes on the scale_relu task (id "bench"), grown by the search with scripted verdicts;
    `total_steps` (default: just those) leaves room for more steps."""
    store = svc.store
    store.put_task("bench", "scale_relu", TASK, "benchmark")
    config = SearchConfig(total_steps=total_steps or nodes)
    run = store.create_run(
        "bench", config=config.model_dump_json(), mode="strict", backend="auto", model="bench", seed=seed
    )
    rng = random.Random(seed)
    task = task_from_source(TASK)
    evaluations: dict[int, int] = {}
    view = store.view(run.id)
    for step in range(nodes - 1):
        chosen = select(view, run.root_id, config, rng)
        index = rng.randrange(len(VERDICTS))
        status, speedup = VERDICTS[index]
        evaluation = evaluations.get(index) or NewEvaluation(
            code_hash=f"h{index}",
            environment="bench",
            mode="strict",
            status=status,
            speedup=speedup,
            result=make_evaluation(task, KERNEL, Status(status), speedup).model_dump_json(),
        )
        node = store.add_child(
            run.id,
            chosen.node,
            chosen.action,
            code=KERNEL,
            code_hash=f"h{step}",
            context_ids=[],
            task_id="bench",
            evaluation=evaluation,
            reward=reward(status, speedup),
        )
        evaluations.setdefault(index, node.evaluation_id)  # type: ignore[arg-type]
    return run.id


def measure(svc: Services, run_id: str, calls: int) -> list[float]:
    latencies = []
    for _ in range(calls):
        start = time.perf_counter()
        chosen = select_uct(svc, SelectUctRequest(run_id=run_id))
        expand_node(svc, ExpandNodeRequest(run_id=run_id, node_id=chosen.node_id, action=chosen.action))
        latencies.append((time.perf_counter() - start) * 1e3)
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--db", help="a PostgreSQL URL (default: a new SQLite file per size)")
    args = parser.parse_args()
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        home = Path(tempfile.mkdtemp(prefix="adaexplore-search-bench-"))
        settings = Settings(home=home, store={"url": args.db} if args.db else {})
        svc = Services(settings=settings, store=open_store(settings.database_url), evaluator=None)  # type: ignore[arg-type]
        started = time.perf_counter()
        run_id = grow(svc, size, seed=size)
        grown = time.perf_counter() - started
        latencies = sorted(measure(svc, run_id, args.calls))
        depth = max(n.depth for n in svc.store.nodes(run_id))
        root_children = svc.store.node(svc.store.run(run_id).root_id).children
        rows.append(
            (
                size,
                grown,
                depth,
                root_children,
                statistics.median(latencies),
                latencies[int(0.99 * (len(latencies) - 1))],
                latencies[-1],
            )
        )
    print(f"store: {'PostgreSQL' if args.db else 'SQLite'}")
    print(f"{'nodes':>8} {'grow s':>8} {'depth':>6} {'root ch':>8} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for size, grown, depth, root_children, p50, p99, worst in rows:
        print(f"{size:>8} {grown:>8.1f} {depth:>6} {root_children:>8} {p50:>8.2f} {p99:>8.2f} {worst:>8.2f}")


if __name__ == "__main__":
    main()
