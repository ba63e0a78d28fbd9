"""Whether the rechecks of timed calls catch a candidate lazy on a random tenth of its calls, and what they cost.

On a GPU (strict mode): a candidate right in the trials and then wrong, at random, in about one timed call in ten
(its own generator's draw: no fixed pattern to guess) is evaluated `--lazy` times, and the honest
kernel `--honest` times; each row says the verdict and the call the verdict names. Then the honest kernel is
timed with no rechecks and with the default 44, `--cost` times each, and the share the rechecks add to a timing
is (timing + judge phases with them - timing phase without) / timing phase without. Targets (issue 52): the lazy
one `mismatch` in >= 99 % of evaluations, the honest one never; the share <= 5 %.

Rows go to OUT/recheck_catch.jsonl as they finish, and a second run resumes after the last one written, so the
script can be run in calls of a few minutes. The table is printed last.

    python3 benchmarks/recheck_catch.py --out "$OUT"                  # 100 lazy, 20 honest, 5 cost pairs
    python3 benchmarks/recheck_catch.py --out "$OUT" --lazy 10 --honest 2 --cost 1 --cpu   # the logic, on the CPU

The cost pairs compare timings of one GPU: where a resumed run's rows came from several, the table takes the cost
rows of the GPU that timed the last one.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from adaexplore.config import ExecutorConfig, Settings
from adaexplore.executor import EvaluationOptions, Evaluator, Mode, load_task

ROOT = Path(__file__).resolve().parents[1]
TASK = ROOT / "tests/executor/data/scale_relu_task.py"
HONEST = ROOT / "tests/adversarial/candidates/h20_wrong_in_a_tenth.py"
# the h20 candidate, wrong at random in a tenth of its calls after the trials rather than in every tenth
_PATTERN = '_STATE["calls"] > 8 and _STATE["calls"] % 10 == 0'


# a candidate may import neither random nor read addresses: its own generator, seeded differently in each
# evaluation (by this script), says which calls it skips
_DRAW = """
def _lazy_now():
    _STATE["r"] = (_STATE["r"] * 6364136223846793005 + 1442695040888963407) % 2**64
    return (_STATE["r"] >> 33) % 10 == 0
"""


def lazy_source(seed: int) -> str:
    text = HONEST.read_text()
    assert _PATTERN in text, "the h20 candidate changed: update benchmarks/recheck_catch.py"
    text = text.replace(_PATTERN, '_STATE["calls"] > 8 and _lazy_now()')
    state = f'_STATE = {{"calls": 0, "r": {seed}}}\n'
    return text.replace('_STATE = {"calls": 0}\n', state + _DRAW)


def honest_source() -> str:
    text = HONEST.read_text()
    assert _PATTERN in text, "the h20 candidate changed: update benchmarks/recheck_catch.py"
    return text.replace(_PATTERN, "False")


def _done(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def main(args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows_path = out / "recheck_catch.jsonl"
    rows = _done(rows_path)
    plan = [("lazy", 44, i) for i in range(args.lazy)] + [("honest", 44, i) for i in range(args.honest)]
    plan += [(f"cost{reps}", reps, i) for i in range(args.cost) for reps in (0, 44)]
    seen = {(r["case"], r["index"]) for r in rows}
    todo = [p for p in plan if (p[0], p[2]) not in seen]
    task = load_task(TASK)
    honest = honest_source()
    deadline = time.monotonic() + args.budget_s
    executor: dict[str, object] = {"backend": "interpret", "time_on_cpu": True} if args.cpu else {}

    async def one(ev: Evaluator, reps: int, limit: anyio.Semaphore, case: str, index: int) -> None:
        async with limit:
            if time.monotonic() > deadline:
                return
            code = lazy_source(1_000_003 * index + 12_345) if case == "lazy" else honest
            result = await ev.evaluate(task, code, EvaluationOptions(mode=Mode.strict))
        row = {
            "case": case,
            "index": index,
            "rechecks": reps,
            "status": result.status.value,
            "message": result.message[:300],
            "timing_s": result.phases.get("timing"),
            "judge_s": result.phases.get("judge"),
            "timed_calls": result.timing.candidate.n if result.timing else None,
            "rechecked": len(result.correctness.rechecks) if result.correctness else 0,
            "gpu": result.provenance.gpu,
        }
        rows.append(row)
        with rows_path.open("a") as f:
            f.write(json.dumps(row) + "\n")
        print(json.dumps(row)[:200], flush=True)

    for reps in sorted({p[1] for p in todo}):
        settings = Settings(home=Path(tempfile.mkdtemp()), executor=ExecutorConfig(recheck_reps=reps, **executor))  # type: ignore[arg-type]
        async with Evaluator(settings) as ev:
            # the catch cases several at a time (their workers start and compile side by side; the GPU's lock keeps
            # their trials and timings apart); the cost pairs one at a time, so that no other evaluation's host
            # work runs beside the timings they compare
            limit = anyio.Semaphore(args.parallel)
            async with anyio.create_task_group() as tg:
                for case, want, index in todo:
                    if want == reps and not case.startswith("cost"):
                        tg.start_soon(one, ev, reps, limit, case, index)
            for case, want, index in todo:
                if want == reps and case.startswith("cost"):
                    await one(ev, reps, limit, case, index)
        if time.monotonic() > deadline:
            print(f"stopped at the time budget ({args.budget_s:.0f} s); run again to resume", flush=True)
            break
    print(table(rows))


def table(rows: list[dict]) -> str:
    lazy = [r for r in rows if r["case"] == "lazy"]
    honest = [r for r in rows if r["case"] == "honest"]
    caught = sum(r["status"] == "mismatch" for r in lazy)
    false = sum(r["status"] != "ok" for r in honest)
    lines = [
        f"lazy on a random tenth: {caught}/{len(lazy)} mismatch (target >= 99 %)",
        f"honest: {len(honest) - false}/{len(honest)} ok (target all)",
    ]
    costs = [r for r in rows if r["case"].startswith("cost")]
    gpu = costs[-1].get("gpu") if costs else None
    costs = [r for r in costs if r.get("gpu") == gpu]
    without = [r["timing_s"] for r in costs if r["case"] == "cost0" and r["timing_s"]]
    with_ = [(r["timing_s"] or 0) + (r["judge_s"] or 0) for r in costs if r["case"] == "cost44" and r["timing_s"]]
    if without and with_:
        base, full = statistics.median(without), statistics.median(with_)
        lines.append(
            f"timing without rechecks {base:.3f} s, with 44 (timing + judge) {full:.3f} s: "
            f"share {(full - base) / base:.1%} (target <= 5 %; {len(without)} and {len(with_)} timings on {gpu})"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="gpu-results")
    parser.add_argument("--lazy", type=int, default=100)
    parser.add_argument("--honest", type=int, default=20)
    parser.add_argument("--cost", type=int, default=5)
    parser.add_argument("--budget-s", type=float, default=480.0, help="start no evaluation after this many seconds")
    parser.add_argument(
        "--parallel", type=int, default=4, help="lazy and honest evaluations under way at once (cost pairs: one)"
    )
    parser.add_argument("--cpu", action="store_true", help="interpret and time on the CPU (a check of the logic)")
    anyio.run(main, parser.parse_args())
