"""Where a bench's time went: the phases of every evaluation in the store (the judge's and the candidate's), summed
over the runs whose task name holds `--task` (all runs by default), with the slowest problems' own phases.

    python3 benchmarks/bench_phases.py                      # the default store ($ADAEXPLORE_HOME)
    python3 benchmarks/bench_phases.py --top 8 --json phases.json

Evaluations under way at once overlap, so the sums are more than the bench's wall time; what they tell is which
phases a faster bench must cut.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from adaexplore.config import Settings
from adaexplore.store import open_store


def phases_by_problem(url: str, task: str | None) -> dict[str, dict[str, float]]:
    """{task name: {phase: seconds summed over its evaluations}}, from the store at `url`."""
    store = open_store(url)
    found: dict[str, dict[str, float]] = {}
    try:
        for run in store.runs():
            name = store.task(run.task_id).name
            if task is not None and task not in name:
                continue
            for node in store.nodes(run.id):
                if node.evaluation_id is None:
                    continue
                _, result = store.node_and_result(node.id)
                if result is None:
                    continue
                sums = found.setdefault(name, {})
                for phase, seconds in (json.loads(result).get("phases") or {}).items():
                    sums[phase] = sums.get(phase, 0.0) + float(seconds)
    finally:
        store.close()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", help="only runs whose task name holds this text")
    parser.add_argument("--top", type=int, default=6, help="how many of the slowest problems to show (default 6)")
    parser.add_argument("--json", type=Path, help="write every problem's phases here")
    args = parser.parse_args()
    found = phases_by_problem(Settings().database_url, args.task)
    if not found:
        raise SystemExit("no evaluation in the store: run a bench (or a search) first")
    if args.json:
        args.json.write_text(json.dumps(found, indent=1, sort_keys=True))
    totals: dict[str, float] = {}
    for sums in found.values():
        for phase, seconds in sums.items():
            totals[phase] = totals.get(phase, 0.0) + seconds

    def line(sums: dict[str, float], n: int = 8) -> str:
        # "total" is the evaluation's own wall time, said first; phases may nest (a compile inside a check)
        top = sorted(((k, v) for k, v in sums.items() if k != "total"), key=lambda kv: -kv[1])[:n]
        return ", ".join(f"{phase} {seconds:.1f}" for phase, seconds in top)

    print(f"{len(found)} problems, evaluations {totals.get('total', 0.0):.0f} s; phases (s): {line(totals, 12)}")
    slowest = sorted(found.items(), key=lambda kv: -kv[1].get("total", 0.0))[: args.top]
    for name, sums in slowest:
        print(f"  {name[:40]:40s} {sums.get('total', 0.0):7.1f}  {line(sums, 5)}")


if __name__ == "__main__":
    main()
