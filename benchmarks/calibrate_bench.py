"""`adaexplore calibrate` on the GPU-truth corpus: the measured kernels loaded into a store as its GPU verdicts,
a calibration fitted on 50 of them, and the estimate scored on the rest with and without it.

Each kernel of the corpus that a GPU timed correct (`estimate_corpus.corpus`: the shared corpus, ours, the
examples, and `--truth` files) becomes what a GPU machine's search leaves in its store: its task (with what the
reference launches at full size), a run, and a node whose evaluation carries the measured times, the GPU's name
and what the kernel launches at full size. What the kernels and references launch is recorded here without a GPU
(the compile-only pass at full size, one subprocess per kernel, not sandboxed: run it on kernels you trust; cached
in `benchmarks/.estimate_records.json` by the files' and the recorder's contents, as `estimate_corpus.py` does).

For each of `--splits` seeded draws, `--train` kernels (50) go into a fresh store, `adaexplore calibrate` (the
package's own `tools.calibrate`) fits there and stores a calibration where it is worth keeping, and the remaining
kernels are estimated with the package's efficiencies and with the calibration in force after it (the package's
where calibrate stored none). The package's efficiencies were fitted to this very corpus, so the same draws are
also run against efficiencies off by known factors (each group's drawn within 1/`--detune`..`--detune`), as for a
GPU or a software stack the package was not fitted on: `roofline.refit` (what calibrate runs) on the 50, kept by
calibrate's own rule. Reported per draw and as medians: the median |log(estimated / measured)| of kernel times
and of speedups over eager PyTorch on the kernels left out, before and after, and calibrate's own
leave-one-problem-out figure on the 50 (which decides whether it stores the fit).

    python benchmarks/calibrate_bench.py                      # record what is missing (minutes), then score
    python benchmarks/calibrate_bench.py --jobs 2 --splits 10 # two recordings at once; ten draws
    python benchmarks/calibrate_bench.py --db postgresql://... --splits 1  # the store on a PostgreSQL server
Needs no GPU. `--json FILE` writes the numbers too.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


# ---- the corpus as a store's verdicts ------------------------------------------------------------------
def _stats(ms: float):  # the domain's Stats
    from adaexplore.executor import Stats

    return Stats(n=100, median_ms=ms, mean_ms=ms, std_ms=0.0, min_ms=ms, max_ms=ms, p10_ms=ms, p90_ms=ms)


def load_store(url: str, kernels: list[dict]) -> None:
    """Write `kernels` into the store at `url` as a GPU machine's search would leave them."""
    from adaexplore.domain import Kind
    from adaexplore.executor import Backend, Evaluation, Mode, Provenance, Status, Timing
    from adaexplore.roofline import gpu_spec
    from adaexplore.store import NewEvaluation, open_store

    store = open_store(url)
    try:
        runs: dict[str, tuple[str, int]] = {}
        for k in kernels:
            task_id = hashlib.sha256(Path(k["task_path"]).read_bytes()).hexdigest()[:16]
            if task_id not in runs:
                store.put_task(task_id, k["problem"], Path(k["task_path"]).read_text(), "file", k["task_work"])
                run = store.create_run(task_id, config="{}", mode="strict", backend="cuda", model="truth", seed=0)
                runs[task_id] = (run.id, run.root_id)
            run_id, root = runs[task_id]
            code = Path(k["kernel_path"]).read_text()
            digest = hashlib.sha256(code.encode()).hexdigest()[:16]
            timing = Timing(
                method="strict",
                statistic="median",
                candidate=_stats(k["kernel_ms"]),
                reference=_stats(k["eager_ms"]),
                speedup=k["eager_ms"] / k["kernel_ms"],
            )
            evaluation = Evaluation(
                status=Status.ok,
                message="timed on the GPU",
                mode=Mode.strict,
                backends=[Backend.cuda],
                timed=True,
                timing=timing,
                provenance=Provenance(
                    adaexplore="truth",
                    python="3",
                    gpu=gpu_spec(k["gpu"]).cuda_name,
                    device=0,
                    environment=f"truth-{k['gpu']}",
                    task_hash=task_id,
                    code_hash=digest,
                    sizes="full",
                    finished_at="2026-12-07T00:00:00+00:00",
                ),
            )
            store.add_child(
                run_id,
                root,
                Kind.large,
                code=code,
                code_hash=digest,
                context_ids=[],
                task_id=task_id,
                evaluation=NewEvaluation(
                    code_hash=digest,
                    environment=evaluation.provenance.environment,
                    mode="strict",
                    status="ok",
                    speedup=timing.speedup,
                    result=evaluation.model_dump_json(),
                    work=k["kernel_work"],
                ),
                reward=1.0,
            )
    finally:
        store.close()


def _errors(kernels: list[dict], calibration, gpu) -> tuple[float, float]:
    """Median |log(estimated / measured)| of kernel times and of speedups."""
    from adaexplore.roofline import ForwardWork, TaskWork, estimate_forward

    times, speedups = [], []
    for k in kernels:
        mine = estimate_forward(ForwardWork.model_validate_json(k["kernel_work"]), gpu, calibration=calibration).ms
        reference = TaskWork.model_validate_json(k["task_work"]).forward
        theirs = estimate_forward(reference, gpu, calibration=calibration).ms
        times.append(abs(math.log(mine / k["kernel_ms"])))
        speedups.append(abs(math.log((theirs / mine) / (k["eager_ms"] / k["kernel_ms"]))))
    return median(times), median(speedups)


def one_split(kernels: list[dict], train: int, seed: int, db: str | None, gpu_name: str) -> dict:
    from adaexplore.config import Settings, StoreConfig
    from adaexplore.executor import calibration_for
    from adaexplore.roofline import CALIBRATION, gpu_spec
    from adaexplore.tools import calibrate, open_reader

    drawn = list(kernels)
    random.Random(seed).shuffle(drawn)
    fit_on, rest = drawn[:train], drawn[train:]
    with tempfile.TemporaryDirectory() as home:
        url = db or f"sqlite:///{home}/adaexplore.db"
        settings = Settings(home=Path(home), store=StoreConfig(url=url))
        load_store(url, fit_on)
        began = time.monotonic()
        with open_reader(settings) as svc:
            report = calibrate(svc, gpu_name)
            stored = svc.store.calibrations()
        seconds = time.monotonic() - began
    gpu = gpu_spec(gpu_name)
    outcome = report.outcomes[0]
    fitted = calibration_for(gpu, stored)
    before = _errors(rest, CALIBRATION, gpu)
    after = _errors(rest, fitted.applied(), gpu) if fitted is not None else before
    return {
        "seed": seed,
        "train": len(fit_on),
        "rest": len(rest),
        "rest_problems": len({k["problem"] for k in rest}),
        "stored": fitted is not None,
        "refused": outcome.refused,
        "factors": fitted.factors if fitted is not None else None,
        "held_out_in_store": [outcome.calibration.error_before, outcome.calibration.error_after]
        if outcome.calibration is not None
        else None,
        "rest_time": [before[0], after[0]],
        "rest_speedup": [before[1], after[1]],
        "calibrate_s": seconds,
    }


def detuned_split(kernels: list[dict], train: int, seed: int, spread: float, gpu_name: str) -> dict:
    """The same draw against efficiencies off by known factors (each group's drawn within 1/spread..spread), as for a
    GPU or a software stack the package was not fitted on: the fit on the 50 (`roofline.refit`, what calibrate
    runs) against those efficiencies, scored on the rest."""
    from adaexplore.roofline import CALIBRATION, FACTOR_GROUPS, ForwardWork, TaskWork, TimedKernel, gpu_spec, refit
    from adaexplore.roofline import scaled as scale

    rng = random.Random(1000 + seed)
    off = {g: round(math.exp(rng.uniform(-math.log(spread), math.log(spread))), 3) for g in FACTOR_GROUPS}
    base = scale(CALIBRATION, off)
    drawn = list(kernels)
    random.Random(seed).shuffle(drawn)
    fit_on, rest = drawn[:train], drawn[train:]
    timed = [
        TimedKernel(
            k["problem"],
            ForwardWork.model_validate_json(k["kernel_work"]),
            TaskWork.model_validate_json(k["task_work"]).forward,
            k["kernel_ms"],
            k["eager_ms"],
        )
        for k in fit_on
    ]
    gpu = gpu_spec(gpu_name)
    fit = refit(timed, gpu, base)
    from adaexplore.tools._calibrate import worth_keeping

    kept = worth_keeping(fit)  # as calibrate would: else the efficiencies in force stay the detuned ones
    before = _errors(rest, base, gpu)
    after = _errors(rest, scale(base, fit.factors), gpu) if kept else before
    return {
        "seed": seed,
        "off_by": off,
        "stored": kept,
        "factors": fit.factors,
        "held_out_in_store": [fit.error_before, fit.error_after],
        "rest_time": [before[0], after[0]],
        "rest_speedup": [before[1], after[1]],
    }


def _table(title: str, results: list[dict]) -> None:
    print(f"\n{title}")
    print(f"{'draw':>4} {'in-store LOPO':>15} {'rest: time error':>18} {'rest: speedup error':>20}")
    for r in results:
        lopo = "{:.3f}->{:.3f}".format(*r["held_out_in_store"]) if r["held_out_in_store"] else "-"
        note = "" if r["stored"] else "  (calibrate would not store it: not 5% better on held-out problems)"
        print(
            f"{r['seed']:>4} {lopo:>15} {r['rest_time'][0]:>8.3f}->{r['rest_time'][1]:<8.3f} "
            f"{r['rest_speedup'][0]:>9.3f}->{r['rest_speedup'][1]:<9.3f}{note}"
        )
    before = median(r["rest_time"][0] for r in results)
    after = median(r["rest_time"][1] for r in results)
    print(
        f"median over {len(results)} draws: kernel-time error on the rest {before:.3f} -> {after:.3f} "
        f"({1 - after / before:.0%} lower); speedup error {median(r['rest_speedup'][0] for r in results):.3f} -> "
        f"{median(r['rest_speedup'][1] for r in results):.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--truth", type=Path, action="append", default=[], help="more rows (measure.py --out)")
    parser.add_argument("--gpu", default="H200", help="the GPU model whose verdicts are fitted (default H200)")
    parser.add_argument("--train", type=int, default=50, help="kernels in the store calibrate reads (50)")
    parser.add_argument("--splits", type=int, default=5, help="seeded draws of those kernels (5)")
    parser.add_argument("--jobs", type=int, default=1, help="kernels recorded at once (1)")
    parser.add_argument(
        "--detune", type=float, default=1.6, help="how far off (at most, per group) the detuned efficiencies are (1.6)"
    )
    parser.add_argument("--db", help="a PostgreSQL URL for the stores (default: an SQLite file per draw)")
    parser.add_argument("--json", type=Path, help="write the numbers here too")
    args = parser.parse_args()
    from estimate_corpus import RECORDS, SHARED, _digest, corpus, record

    if not SHARED.is_dir():
        sys.exit(f"the corpus needs {SHARED} (the shared data beside the checkout)")
    rows = [
        r
        for r in corpus(args.truth)
        if (r.get("h200_status") or r.get("status")) == "ok" and r.get("kernel_ms") and r.get("eager_ms")
    ]
    from adaexplore.roofline import gpu_for_device, gpu_spec

    wanted = gpu_spec(args.gpu).name
    for r in rows:  # the GPU a row names (as CUDA does: "NVIDIA H100 80GB HBM3"), else the corpus's H200
        found = gpu_for_device(r["gpu"]) if r.get("gpu") else None
        r["gpu"] = found.name if found is not None else "H200"
    rows = [r for r in rows if r["gpu"] == wanted]
    records = json.loads(RECORDS.read_text()) if RECORDS.is_file() else {}
    record(rows, records, args.jobs)
    kernels = []
    for r in rows:
        got = records.get(_digest(r["task_path"], r["kernel_path"]), {})
        if "error" in got or got.get("task") is None or not got["kernel"]["complete"]:
            print(f"left out (not recorded to its end): {r['kernel']}")
            continue
        kernels.append({**r, "kernel_work": json.dumps(got["kernel"]), "task_work": json.dumps(got["task"])})
    print(f"{len(kernels)} {wanted} kernels of {len({k['problem'] for k in kernels})} problems with records")
    from adaexplore.roofline import MIN_KERNELS

    if args.train < MIN_KERNELS:
        sys.exit(f"--train {args.train}: calibrate fits on at least {MIN_KERNELS} kernels")
    if len(kernels) <= args.train:
        sys.exit(f"{len(kernels)} kernels: no rest to score after {args.train} in the store")
    if args.db and args.splits > 1:
        sys.exit("--db holds one store: give --splits 1 with it")
    results = [one_split(kernels, args.train, seed, args.db, wanted) for seed in range(args.splits)]
    detuned = [detuned_split(kernels, args.train, seed, args.detune, wanted) for seed in range(args.splits)]
    _table(f"efficiencies off by up to {args.detune}x per group, refitted on {args.train} (roofline.refit)", detuned)
    _table(
        f"adaexplore calibrate on a store of {args.train} {wanted} verdicts, the package's own efficiencies "
        "(fitted to this corpus)",
        results,
    )
    if args.json:
        args.json.write_text(json.dumps({"draws": results, "detuned": detuned, "kernels": len(kernels)}, indent=2))


if __name__ == "__main__":
    main()
