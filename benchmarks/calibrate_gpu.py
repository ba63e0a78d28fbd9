"""`adaexplore calibrate` on a GPU's own verdicts, the whole way: kernels of the GPU-truth corpus
(`benchmarks/gpu_truth/`) are evaluated on this machine's GPU through the tools a search uses (a run per problem,
each kernel a step: `compile_and_profile`), so that each timed correct kernel lands in the store with what it
launches at full size; then `calibrate` fits that store, and the table says how many verdicts carried their
estimate inputs, what the fit found and whether it was stored.

    python benchmarks/calibrate_gpu.py --kernelbench DIR                  # on a GPU machine (KernelBench's levels)
    python benchmarks/calibrate_gpu.py --kernelbench DIR --stop-after 420 # start no evaluation after 420 s
    python benchmarks/calibrate_gpu.py --kernelbench DIR --only level2/   # some kernels (measure.py's --only)

Resumable: the store is `--home` (default `benchmarks/.calibrate_gpu/`), and a kernel already evaluated there is
not evaluated again; the database is copied to `$OUT` where that is set. Every problem's first `--breadth` kernels
go before any problem's others, so a run cut short has verdicts of every problem (calibrate holds problems out).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks" / "gpu_truth"))


async def evaluate(kernelbench: Path, home: Path, only: str | None, stop_after: float, breadth: int) -> None:
    from measure import broad_first, kernels

    from adaexplore.config import Settings
    from adaexplore.errors import AdaexploreError
    from adaexplore.tools import (
        CompileAndProfileRequest,
        CreateTaskRequest,
        StartRunRequest,
        compile_and_profile,
        create_task,
        open_services,
        start_run,
    )

    settings = Settings(home=home)
    chosen = [(level, task, kernel, None) for level, task, kernel in kernels(only, kernelbench)]
    todo = broad_first(chosen, breadth)
    began = time.monotonic()
    async with open_services(settings) as svc:
        await svc.evaluator.ready()
        runs: dict[str, tuple[str, int, set[str]]] = {}  # a run per task, with the code it already evaluated
        for run in svc.store.runs():
            runs[run.task_id] = (run.id, run.root_id, {n.code for n in svc.store.nodes(run.id)})
        task_ids: dict[Path, str] = {}
        for i, (_, task_path, kernel_path, _) in enumerate(todo, 1):
            if time.monotonic() - began > stop_after:
                print(f"stopped after {stop_after:.0f} s: {len(todo) - i + 1} kernels not evaluated", flush=True)
                break
            code = kernel_path.read_text()
            try:
                if task_path not in task_ids:
                    task_ids[task_path] = create_task(svc, CreateTaskRequest(path=str(task_path))).task_id
                task_id = task_ids[task_path]
                if task_id not in runs:
                    asked = StartRunRequest(task_id=task_id, seed=0, total_steps=1000, model="calibrate-gpu")
                    made = start_run(svc, asked)
                    runs[task_id] = (made.run_id, made.root_node_id, set())
                run_id, root, done = runs[task_id]
                if code in done:
                    continue
                step = await compile_and_profile(
                    svc,
                    CompileAndProfileRequest(run_id=run_id, parent_id=root, action="large", code=code),
                    budget="protocol",
                )
            except AdaexploreError as exc:  # the task's own failure (or a refused call): the next kernel
                print(f"[{i}/{len(todo)}] {kernel_path.relative_to(ROOT)}: not evaluated: {exc}", flush=True)
                continue
            done.add(code)
            kept = ""
            if step.node_id is not None:
                record = svc.store.node(step.node_id)
                stored = svc.store.evaluation(record.evaluation_id) if record.evaluation_id is not None else None
                kept = ", its launches kept" if stored is not None and stored.work else ", no launches kept"
            took = time.monotonic() - began
            print(f"[{i}/{len(todo)} {took:.0f}s] {kernel_path.relative_to(ROOT)}: {step.status}{kept}", flush=True)


def report(home: Path) -> None:
    from adaexplore.config import Settings
    from adaexplore.errors import RequestError
    from adaexplore.tools import calibrate, open_reader

    with open_reader(Settings(home=home)) as svc:
        verdicts, without = svc.store.timed_verdicts()
        print(f"\n{len(verdicts)} timed correct kernels with their launches kept; {without} without")
        try:
            outcome = calibrate(svc)
        except RequestError as exc:
            print(f"calibrate: {exc}")
            return
    print(f"{'gpu':6} {'kernels':>7} {'held out':>24} {'error before -> after':>22}  stored / why not")
    for o in outcome.outcomes:
        c = o.calibration
        if c is None:
            print(f"{o.gpu:6} {o.kernels:>7} {'-':>24} {'-':>22}  {o.refused}")
            continue
        said = c.label() if c.id is not None else o.refused
        print(f"{o.gpu:6} {c.kernels:>7} {c.held_out:>24} {c.error_before:>10.3f} -> {c.error_after:<8.3f}  {said}")
        print(f"       factors: {c.factors}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernelbench", type=Path, required=True, help="the folder of KernelBench's levels")
    parser.add_argument("--home", type=Path, default=ROOT / "benchmarks" / ".calibrate_gpu", help="the store's home")
    parser.add_argument("--only", help="the kernels whose path holds this text (or one of several, a,b)")
    parser.add_argument("--stop-after", type=float, default=420, help="start no evaluation after this (420 s)")
    parser.add_argument("--breadth", type=int, default=3, help="each problem's first kernels go first (3)")
    parser.add_argument("--report-only", action="store_true", help="calibrate the store as it is; evaluate nothing")
    args = parser.parse_args()
    args.home.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        anyio.run(evaluate, args.kernelbench, args.home, args.only, args.stop_after, args.breadth)
    report(args.home)
    out = os.environ.get("OUT")
    if out:
        shutil.copy(args.home / "adaexplore.db", Path(out) / "calibrate_gpu.db")


if __name__ == "__main__":
    main()
