"""The CPU path's verdicts against the H200's, over the shared corpus of GPU truth (`../shared/data/gpu-truth/`).

Every kernel is judged as a search judges it on a machine without a GPU: the task with small sizes derived as
`create_task` derives them, the compile and interpret backends in strict mode, and the budget of an MCP call
(executor.call_budget_s). Its verdict is compared with the H200's (correct against not correct), and the time
each took is kept, so the same run says whether an honest kernel ran out of its budget.

    python benchmarks/cpu_verdicts.py                 # the whole corpus (about 20 minutes on 2 cores)
    python benchmarks/cpu_verdicts.py --only 76/ 12/8 # kernels whose path holds one of these
    python benchmarks/cpu_verdicts.py --json out.json

`tests/executor/test_gpu_truth.py` runs part of it in the test suite.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
TRUTH = SHARED / "gpu-truth" / "truth.jsonl"
# rows of the shared corpus measured again on the H200 after a change made the old row stale (a policy that refused
# the kernel then accepts it now), by kernel path; they replace the shared rows
REMEASURED = ROOT / "benchmarks" / "gpu_truth" / "shared_remeasured.jsonl"


@dataclass
class Outcome:
    kernel: str
    gpu: str  # the H200's status
    cpu: str  # the status here
    seconds: float
    checked: bool  # its tf32 dots were checked at the task's full reduction length
    message: str

    @property
    def agrees(self) -> bool:
        return (self.gpu == "ok") == (self.cpu == "ok")


def corpus(only: list[str] | None = None) -> list[dict]:
    """The corpus's rows with each kernel's code, each kernel once (a run's best kernel is also one of its steps)."""
    from adaexplore.executor import code_hash

    again = {}
    if REMEASURED.is_file():
        again = {r["kernel"]: r for r in map(json.loads, REMEASURED.read_text().splitlines())}
    rows, seen = [], set()
    for line in TRUTH.read_text().splitlines():
        row = json.loads(line)
        row = again.get(row["kernel"], row)
        if only and not any(part in row["kernel"] for part in only):
            continue
        code = (TRUTH.parent / row["kernel"]).read_text()
        if code_hash(code) not in seen:
            seen.add(code_hash(code))
            rows.append(row | {"code": code})
    return rows


async def judge(evaluator, rows: list[dict], settings, budget_s: float | None) -> list[Outcome]:  # type: ignore[no-untyped-def]
    """Each row's kernel judged on the CPU path, its task given the small sizes a search derives (one probe worker
    derives them for every problem, as `derive_small_sizes` would with a worker of its own for each)."""
    from adaexplore.executor import EvaluationOptions, SizeProber, task_from_source, with_small_sizes

    tasks = {}
    async with SizeProber(settings) as prober:
        for problem in dict.fromkeys(row["problem"] for row in rows):
            source = (SHARED / "kernelbench" / "level2" / problem).read_text()
            derived = await prober.derive(source)
            sizes = derived.sizes or {}
            tasks[problem] = task_from_source(with_small_sizes(source, sizes, "derived"), name=problem)
    outcomes = []
    for row in rows:
        problem = row["problem"]
        started = time.perf_counter()
        options = EvaluationOptions(mode="strict", candidate_budget_s=budget_s)
        result = await evaluator.evaluate(tasks[problem], row["code"], options)
        checked = any(f.code.startswith("precision_") for f in result.audit.flags) or (
            "full reduction length" in result.message
        )
        outcomes.append(
            Outcome(
                row["kernel"],
                row["h200_status"],
                result.status.value,
                time.perf_counter() - started,
                checked,
                result.message[:300],
            )
        )
    return outcomes


def table(outcomes: list[Outcome]) -> str:
    lines = [f"{'kernel':52} {'H200':15} {'CPU':15} {'s':>6}  checked"]
    for o in outcomes:
        mark = "" if o.agrees else "  DISAGREES"
        lines.append(f"{o.kernel:52} {o.gpu:15} {o.cpu:15} {o.seconds:6.1f}  {'yes' if o.checked else ''}{mark}")
    agreed = sum(o.agrees for o in outcomes)
    out_of_time = [o.kernel for o in outcomes if o.cpu == "timeout" and o.gpu == "ok"]
    lines.append(
        f"agree: {agreed} of {len(outcomes)} ({agreed / max(len(outcomes), 1):.1%}); honest kernels out of time: "
        f"{len(out_of_time)} {out_of_time or ''}; {sum(o.seconds for o in outcomes):.0f} s in all"
    )
    return "\n".join(lines)


async def main(only: list[str] | None, out: Path | None) -> None:
    from adaexplore.config import Settings
    from adaexplore.executor import Evaluator

    settings = Settings()
    async with Evaluator(settings) as evaluator:
        outcomes = await judge(evaluator, corpus(only), settings, settings.executor.call_budget_s)
    print(table(outcomes))
    if out is not None:
        out.write_text(json.dumps([asdict(o) for o in outcomes], indent=2))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", help="kernels whose path holds one of these")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not TRUTH.is_file():
        sys.exit(f"the corpus is not at {TRUTH.parent}")
    anyio.run(main, args.only, args.json)
