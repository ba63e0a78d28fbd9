"""How well the performance estimate ranks and times kernels that a GPU measured, and its calibration.

The corpus is every kernel with an H200 verdict: `../shared/data/gpu-truth/` (kernels assistants wrote for
KernelBench Level 2), `benchmarks/gpu_truth/` (ours, where `truth.jsonl` has been measured) and the example kernels
an H200 timed (`benchmarks/gpu_truth/examples.jsonl`, from this folder's README: the one kernel whose dots run on
the CUDA cores). For each kernel
this records, without a GPU, what its forward does at full size (the compile-only pass of the compile backend, in
a subprocess per kernel, not sandboxed: run it on kernels you trust) and what its task's reference does, then
estimates both on an H200 and compares with the measured times.

    python benchmarks/estimate_corpus.py record          # fill the records (cached by code hash; minutes)
    python benchmarks/estimate_corpus.py report          # quality of the calibration in the package
    python benchmarks/estimate_corpus.py fit             # fit the calibration; quality on held-out problems
    python benchmarks/estimate_corpus.py sol             # each time and estimate against its task's speed of light
    ... --problems 12_,76_                               # those problems alone (names or their starts)
    ... --truth v.jsonl                                  # with rows `gpu_truth/measure.py --out v.jsonl` wrote
    ... --gpu H100 --truth gpu_truth/h100_2026-12-07.jsonl   # score the rows an H100 timed (on the H100's peaks)

Each row is estimated on the GPU that timed it (its `gpu`, else the H200). The fit reads the H200's rows alone, so
`fit --gpu H100` scores each H100 problem by the calibration fitted on the H200's rows of the other problems:
absolute times of two GPUs are never fitted together. `--fit-relative` lets the fit read the other GPUs' rows too,
by how each kernel's time compares with the others of its problem on that GPU (tried: it held out worse on
both GPUs, so the package is not fitted so).

Only the kernels a GPU timed are recorded and scored (`sol` records the others too).

`report`, `fit` and `sol` record first what has no record yet (`--jobs N` records N kernels at once), so once
the H200 has measured more of the corpus, `fit --jobs 2 --json fit.json` is the one command that scores and fits
on it. A record is kept under the hash of the task, the kernel and the recorder's own sources (the modules that
read the IR, the compiled code and the assembler's log), so a change to any of them records afresh.

Reported: Spearman's rank correlation of estimated and measured speedups per problem (and their mean), the
median |log(estimated / measured)| of kernel times and of speedups, and how fast the kernel an untimed search
would call best (the highest estimate among the kernels that are correct on the GPU) runs against the fastest
of its problem (geometric mean over problems). `fit` fits on all problems but one and reports on that one, for
each problem in turn, then prints the calibration fitted on all. `sol` holds every measured time and every estimate
against its task's speed of light in strict mode on an H200 (the fastest path its tolerance admits, bf16x3 for
fp32 products) and against the rule before it (fp32 products at a third of the TF32 rate), and prints the largest
`sol_fraction` of each: none may exceed 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from estimate_quality import quality, show, show_sol, status  # noqa: E402  (the measures it reports)

# the sources whose output a record is: a change to one of them makes every record stale
RECORDER = (
    "adaexplore/roofline/_ttir.py",
    "adaexplore/roofline/_work.py",
    "adaexplore/roofline/_layout.py",
    "adaexplore/executor/worker/cost/_work_record.py",
    "adaexplore/executor/worker/cost/_static_cost.py",
    "adaexplore/executor/worker/cost/_ptxas_advice.py",
    "adaexplore/executor/worker/cost/_full_size.py",
    "adaexplore/executor/worker/candidate/_launches.py",
)
SHARED = ROOT.parent / "shared" / "data"
OURS = ROOT / "benchmarks" / "gpu_truth"
RECORDS = ROOT / "benchmarks" / ".estimate_records.json"
# the GPU whose timings the package's calibration is fitted on
HOME_GPU = "H200"


# ---- the corpus --------------------------------------------------------------------------------------
def corpus(extra: list[Path] | None = None) -> list[dict]:
    """Every kernel with a GPU verdict; a shared row the H200 measured again (`shared_remeasured.jsonl`) in place
    of the stale one; and the rows of `extra` files that `gpu_truth/measure.py --out` wrote (kernels of our corpus
    measured apart, such as its variants of one kernel in paper mode)."""
    rows = []
    remeasured = OURS / "shared_remeasured.jsonl"
    again = {}
    if remeasured.is_file():
        for line in remeasured.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                again[row["kernel"]] = row
    sources = (
        (SHARED / "gpu-truth", SHARED / "gpu-truth" / "truth.jsonl"),
        (OURS, OURS / "truth.jsonl"),
        (ROOT, OURS / "examples.jsonl"),
        *((OURS, path) for path in extra or []),
    )
    for base, truth in sources:
        if not truth.is_file():
            continue
        for line in truth.read_text().splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            if base == SHARED / "gpu-truth" and row["kernel"] in again:
                row = again[row["kernel"]]
            level = row.get("level", 2)
            task = ROOT / row["task"] if "task" in row else SHARED / "kernelbench" / f"level{level}" / row["problem"]
            row["task_path"] = str(task)
            row["kernel_path"] = str(base / row["kernel"])
            row["source"] = {OURS: "ours", ROOT: "examples"}.get(base, "shared")
            if row.get("mode", "strict") != "strict":  # timed in another protocol: ranked among themselves
                row["problem"] += f" [{row['mode']}]"
            rows.append(row)
    return rows


_recorder_hash: list[bytes] = []


def _digest(*paths: str) -> str:
    if not _recorder_hash:
        h = hashlib.sha256()
        for name in RECORDER:
            h.update((ROOT / name).read_bytes())
        _recorder_hash.append(h.digest())
    h = hashlib.sha256(_recorder_hash[0])
    for path in paths:
        h.update(Path(path).read_bytes())
    return h.hexdigest()[:20]


# ---- recording (one subprocess per kernel) -------------------------------------------------------------
def record_one(task_path: str, kernel_path: str) -> dict:
    os.environ.pop("TRITON_INTERPRET", None)
    from adaexplore.executor.worker.candidate._compile_only import activate_compile_only

    activate_compile_only("cuda:90")
    from adaexplore.domain import Backend
    from adaexplore.executor.worker.candidate._launches import LaunchTracker
    from adaexplore.executor.worker.confine._faults import CANDIDATE_MODULE
    from adaexplore.executor.worker.confine._importing import import_file
    from adaexplore.executor.worker.cost._full_size import full_size_pass, reference_work
    from adaexplore.executor.worker.cost._static_cost import capture_ptxas_logs
    from adaexplore.roofline import ForwardWork

    tracker = LaunchTracker(Backend.compile)
    tracker.install()
    capture_ptxas_logs()
    tracker.shared_memory_limit = 232448
    module = import_file(CANDIDATE_MODULE, kernel_path)
    stopped, steps, _ = full_size_pass(tracker, module.ModelNew, task_path, None)
    task, note = reference_work(task_path, None)
    return {
        "kernel": ForwardWork(steps=steps, complete=not stopped, note=stopped).model_dump(mode="json"),
        "task": task.model_dump(mode="json") if task is not None else None,
        "task_note": note,
    }


def _record_in_subprocess(row: dict) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "record-one", row["task_path"], row["kernel_path"]],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:] or ["failed"]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def record(rows: list[dict], records: dict, jobs: int = 1) -> None:
    """Record every kernel that has no record yet, `jobs` at once, saving after each."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    todo = [r for r in rows if _digest(r["task_path"], r["kernel_path"]) not in records]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(_record_in_subprocess, row): row for row in todo}
        for i, future in enumerate(as_completed(futures), 1):
            row = futures[future]
            records[_digest(row["task_path"], row["kernel_path"])] = got = future.result()
            print(f"[{i}/{len(todo)}] {row['kernel']}", flush=True)
            if "error" in got:
                print("   failed:", got["error"], flush=True)
            RECORDS.write_text(json.dumps(records))


# ---- estimates -------------------------------------------------------------------------------------
def gpu_of(row: dict) -> str:
    """The GPU table's name of the GPU that timed a row (`gpu` as CUDA names it), else the corpus's H200."""
    from adaexplore.roofline import gpu_for_device

    found = gpu_for_device(row["gpu"]) if row.get("gpu") else None
    return found.name if found is not None else "H200"


_parsed: dict[str, tuple] = {}


def estimates(rows: list[dict], records: dict, calibration) -> list[dict]:
    """Each recorded row with its kernel's and its reference's estimates on the GPU that timed it."""
    from adaexplore.roofline import ForwardWork, TaskWork, estimate_forward, gpu_spec

    out = []
    for row in rows:
        gpu = gpu_spec(gpu_of(row))
        key = _digest(row["task_path"], row["kernel_path"])
        rec = records.get(key)
        if not rec or "error" in rec or rec.get("task") is None:
            continue
        if key not in _parsed:
            _parsed[key] = (ForwardWork.model_validate(rec["kernel"]), TaskWork.model_validate(rec["task"]))
        kernel, task = _parsed[key]
        mine = estimate_forward(kernel, gpu, calibration=calibration)
        theirs = estimate_forward(task.forward, gpu, calibration=calibration)
        out.append({**row, "est_ms": mine.ms, "est_ref_ms": theirs.ms, "complete": kernel.complete})
    return out


# ---- fitting -----------------------------------------------------------------------------------------
# the calibration's fractions of a peak (at most 1) and its other constants (any positive value)
FITTED = (
    "tensor_cores",
    "split_products",
    "tf32_n_major",
    "fma_k_major",
    "pipeline_exponent",
    "cuda_cores",
    "elementwise",
    "memory",
    "library_gemm",
    "library_conv",
    "library_memory",
    "cache_rate",
    "spill_bytes",
    "serial_share",
)
FRACTIONS = {
    "tensor_cores",
    "split_products",
    "tf32_n_major",
    "fma_k_major",
    "cuda_cores",
    "elementwise",
    "memory",
    "library_gemm",
    "library_conv",
    "library_memory",
    "serial_share",
}


def loss(rows: list[dict], records: dict, calibration, relative: list[dict] | None = None) -> float:
    """Mean squared log error of the kernels' and their references' times on `rows`, plus, on `relative` (rows of
    another GPU), each kernel's log error less the mean of its problem's: only how the kernels of one problem on
    one GPU compare, never their absolute times."""
    scored = estimates(rows, records, calibration)
    terms = []
    seen = set()
    for r in scored:
        if status(r) == "ok" and r.get("kernel_ms"):
            terms.append(math.log(r["est_ms"] / r["kernel_ms"]) ** 2)
            if r["problem"] not in seen:
                seen.add(r["problem"])
                terms.append(math.log(r["est_ref_ms"] / r["eager_ms"]) ** 2)
    groups: dict[str, list[float]] = {}
    for r in estimates(relative or [], records, calibration):
        if status(r) == "ok" and r.get("kernel_ms"):
            groups.setdefault(r["problem"], []).append(math.log(r["est_ms"] / r["kernel_ms"]))
    for errors in groups.values():
        middle = sum(errors) / len(errors)
        terms.extend((e - middle) ** 2 for e in errors if len(errors) > 1)
    return sum(terms) / max(len(terms), 1)


def fit(rows: list[dict], records: dict, start, rounds: int = 6, relative: list[dict] | None = None):
    """Coordinate search in log space: each efficiency in turn scaled by factors that shrink every round,
    within (0, 1]. `relative`: rows of other GPUs, read by `loss` for how kernels of one problem compare."""
    best = start
    best_loss = loss(rows, records, best, relative)
    step = 1.6
    for _ in range(rounds):
        for name in FITTED:
            for factor in (step, 1 / step):
                value = getattr(best, name) * factor
                value = min(1.0, value) if name in FRACTIONS else value
                trial = dataclasses.replace(best, **{name: value})
                trial_loss = loss(rows, records, trial, relative)
                if trial_loss < best_loss - 1e-9:
                    best, best_loss = trial, trial_loss
        step = math.sqrt(step)
    return best, best_loss


def base_problem(problem: str) -> str:
    """A problem's name without the protocol it was timed in ("12_Gemm.py [paper]" -> "12_Gemm.py")."""
    return problem.split(" [", 1)[0]


def held_out(
    scored: list[dict], home: list[dict], records: dict, start, relative: list[dict] | None = None
) -> list[dict]:
    """Each problem of `scored` estimated by a calibration fitted on the rows of `home` (and `relative`) that are of
    other problems (a problem no row of them has is estimated by the fit on all of them)."""
    out = []
    fits: dict[frozenset, object] = {}
    for problem in sorted({r["problem"] for r in scored}):
        train = [r for r in home if base_problem(r["problem"]) != base_problem(problem)]
        also = [r for r in relative or [] if base_problem(r["problem"]) != base_problem(problem)]
        key = frozenset(id(r) for r in train + also)
        if key not in fits:
            fits[key], _ = fit(train, records, start, relative=also)
        out.extend(estimates([r for r in scored if r["problem"] == problem], records, fits[key]))
    return out


def sol_fractions(rows: list[dict], records: dict) -> dict:
    """Each kernel's measured and estimated share of its task's speed of light, now and under the rule before it."""
    from adaexplore.domain import Mode
    from adaexplore.executor import load_task
    from adaexplore.executor.pipeline.stages import speed
    from adaexplore.roofline import CALIBRATION, PATHS, ForwardWork, OpWork, TaskWork, estimate_forward, gpu_spec

    gpu = gpu_spec("H200")
    out = []
    for row in rows:
        rec = records.get(_digest(row["task_path"], row["kernel_path"]))
        if not rec or "error" in rec or rec.get("task") is None:
            continue
        task = TaskWork.model_validate(rec["task"])
        sol = speed.sol_for(load_task(row["task_path"]), Mode.strict, task, gpu)
        assert sol is not None
        # before: every fp32 product at a third of the TF32 rate (tf32x3), the others as now
        compute = 0.0
        for op in task.forward.steps:
            if isinstance(op, OpWork) and op.flops:
                path = PATHS["tf32x3"] if op.dtype == "float32" else PATHS[sol.matmul_paths[op.dtype]]
                compute += op.flops / ((path.tflops(gpu) or gpu.fp16_tflops) * 1e9)
        before = max(sol.memory_ms, compute, gpu.launch_us * 1e-3)
        kernel = ForwardWork.model_validate(rec["kernel"])
        est = estimate_forward(kernel, gpu, calibration=CALIBRATION).ms if kernel.complete else None
        measured = row.get("kernel_ms") if status(row) == "ok" else None
        out.append(
            {
                "kernel": row["kernel"],
                "sol_ms": sol.ms,
                "before_ms": before,
                "path": sol.fp32_matmuls,
                "measured": sol.ms / measured if measured else None,
                "measured_before": before / measured if measured else None,
                # estimates are made of correct kernels only: a verdict that is not ok has none
                "estimated": sol.ms / est if est and status(row) == "ok" else None,
                "estimated_before": before / est if est and status(row) == "ok" else None,
            }
        )
    return {"kernels": out}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["record", "report", "fit", "sol", "record-one"])
    parser.add_argument("paths", nargs="*")
    parser.add_argument("--json", type=Path, help="write the numbers here too")
    parser.add_argument("--jobs", type=int, default=1, help="kernels recorded at once (default 1)")
    parser.add_argument(
        "--truth",
        type=Path,
        action="append",
        default=[],
        help="more rows of our corpus, as gpu_truth/measure.py --out wrote them (repeatable)",
    )
    parser.add_argument(
        "--gpu",
        default=HOME_GPU,
        help=f"score the rows this GPU timed (default {HOME_GPU}; H100: give its rows with --truth); the fit reads the "
        f"{HOME_GPU}'s alone: absolute times of two GPUs are never fitted together",
    )
    parser.add_argument(
        "--fit-relative",
        action="store_true",
        help="the fit also reads the rows of other GPUs (--truth), by how each kernel's time compares with the others "
        "of its problem on that GPU (never their absolute times)",
    )
    parser.add_argument(
        "--problems", help="score these problems alone: names or their starts, comma-separated ('12_Gemm,76_')"
    )
    args = parser.parse_args()
    if args.action == "record-one":
        print(json.dumps(record_one(*args.paths)))
        return
    if not SHARED.is_dir():
        sys.exit(f"the corpus needs {SHARED} (the shared data beside the checkout)")
    missing = [str(p) for p in args.truth if not p.is_file()]
    if missing:
        sys.exit(f"no such truth file: {', '.join(missing)}")
    rows = corpus(args.truth)
    if args.problems:
        wanted = [p.strip() for p in args.problems.split(",") if p.strip()]
        rows = [r for r in rows if any(r["problem"].startswith(w) for w in wanted)]
        if not rows:
            sys.exit(f"no kernel of the corpus is of the problems {args.problems!r} (names start like '12_Gemm')")
    from adaexplore.config import ConfigError
    from adaexplore.roofline import gpu_spec

    try:
        args.gpu = gpu_spec(args.gpu).name
    except ConfigError as exc:
        sys.exit(f"--gpu {args.gpu}: {exc}")
    # the rows scored are those the named GPU timed; the calibration is fitted on the H200's, whatever is scored
    scored = [r for r in rows if gpu_of(r) == args.gpu]
    home = [r for r in rows if gpu_of(r) == HOME_GPU]
    if not scored:
        sys.exit(f"no row of the corpus was timed on {args.gpu} (give its rows with --truth)")
    records = json.loads(RECORDS.read_text()) if RECORDS.is_file() else {}
    # only the kernels a GPU timed are scored; `sol` reads the others too
    wanted_rows = scored if args.action == "sol" else [r for r in scored + home if status(r) == "ok"]
    record(list({id(r): r for r in wanted_rows}.values()), records, args.jobs)
    if args.action == "record":
        return
    from adaexplore.roofline import CALIBRATION

    failed = [r["kernel"] for r in scored if "error" in records.get(_digest(r["task_path"], r["kernel_path"]), {})]
    if failed:
        print(f"{len(failed)} kernels could not be recorded and are left out: {', '.join(failed)}")
    result: dict = {
        "gpu": args.gpu,
        "corpus": {"kernels": len(scored), "problems": len({r["problem"] for r in scored})},
    }
    if args.action == "sol":
        result = sol_fractions(scored, records)
        show_sol(result)
    elif args.action == "report":
        result["package"] = quality(estimates(scored, records, CALIBRATION))
        show(result["package"], f"the calibration in the package, on the {args.gpu}'s timings")
    else:
        relative = [r for r in rows if gpu_of(r) != HOME_GPU and status(r) == "ok"] if args.fit_relative else []
        result["held_out"] = quality(held_out(scored, home, records, CALIBRATION, relative))
        also = f" and the others' relative times ({len(relative)} rows)" if relative else ""
        show(result["held_out"], f"{args.gpu}: fitted on the {HOME_GPU}'s timings{also}, without the problem scored")
        fitted, fitted_loss = fit(home, records, CALIBRATION, relative=relative)
        result["fitted_all"] = quality(estimates(scored, records, fitted))
        show(result["fitted_all"], f"{args.gpu}: fitted on all the {HOME_GPU}'s timings (loss {fitted_loss:.3f})")
        print("\nCalibration(" + ", ".join(f"{n}={getattr(fitted, n):.3g}" for n in FITTED) + ")")
        result["calibration"] = {n: getattr(fitted, n) for n in FITTED}
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
