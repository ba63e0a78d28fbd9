"""The full-size coverage check over honest kernels: does it ever say an honest kernel leaves an output unwritten?

Every kernel of the corpora (`examples/kernels/*/correct.py`, `benchmarks/gpu_truth/`, the shared corpus of GPU
truth, and the adversarial battery's honest corpus) is followed as the compile check follows it
(worker/coverage/_coverage.py): its forward at its task's full sizes on shape-only tensors, each launch compiled for
sm_90 and walked for where it writes. A kernel that an H200 found `ok` (or, for our own corpus, one correct in the
interpreter: its rows are not all measured yet) must have no gap; the table says which did, and how long the check
itself took (the compile is not counted).

    python benchmarks/coverage_corpus.py --kernelbench ../shared/data/kernelbench --shared ../shared/data/gpu-truth
    python benchmarks/coverage_corpus.py --only level2/12 gemm_epilogue --json out.json

Each kernel runs in a process of its own (`--one TASK KERNEL`, which prints one JSON line), with the compile-only
driver, the device queries answered as an H200 and the candidate imported as the workers import it (without the
sandbox: the corpora are ours). Kernels are compiled into a Triton cache under `--cache` (default a temporary
folder), so a second run takes a fraction of the first.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OURS = ROOT / "benchmarks" / "gpu_truth"
REMEASURED = OURS / "shared_remeasured.jsonl"


_TRACKER = None


def _tracker():  # type: ignore[no-untyped-def]
    """The compile-only launch tracker of this process, installed once (as a worker installs it)."""
    global _TRACKER
    if _TRACKER is None:
        from adaexplore.domain import Backend
        from adaexplore.executor.worker.candidate._compile_only import activate_compile_only
        from adaexplore.executor.worker.candidate._launches import LaunchTracker
        from adaexplore.executor.worker.cpu._cuda_on_cpu import install_device_queries, install_is_cuda
        from adaexplore.roofline import gpu_spec

        activate_compile_only("cuda:90")
        install_is_cuda()
        install_device_queries(gpu_spec("H200"))
        _TRACKER = LaunchTracker(Backend.compile)
        _TRACKER.install()
        _TRACKER.shared_memory_limit = 232448
    return _TRACKER


def one(task: str, kernel: str) -> dict:
    """Follow one kernel's forward at its task's full sizes; what the check found, as a dict."""
    import torch

    from adaexplore.executor.worker.confine._faults import CANDIDATE_MODULE
    from adaexplore.executor.worker.confine._importing import import_file
    from adaexplore.executor.worker.cost._full_size import full_size_pass
    from adaexplore.executor.worker.coverage._coverage import CoverageRecorder
    from adaexplore.executor.worker.cpu._cuda_on_cpu import cuda_on_cpu

    tracker = _tracker()
    module = import_file(CANDIDATE_MODULE, kernel)
    recorder = CoverageRecorder(tracker.shared_memory_limit)
    started = time.perf_counter()
    with cuda_on_cpu(), torch.no_grad():
        stopped, _, coverage = full_size_pass(tracker, module.ModelNew, task, None, recorder)
    return {
        "stopped": stopped,
        "gaps": [g.model_dump() for g in coverage.gaps] if coverage is not None else [],
        "notes": coverage.notes if coverage is not None else [],
        "failed": coverage.failed if coverage is not None else "",
        "launches": coverage.launches if coverage is not None else 0,
        "check_s": coverage.seconds if coverage is not None else 0.0,
        "pass_s": round(time.perf_counter() - started, 2),
    }


def corpus(kernelbench: Path, shared: Path | None, only: list[str]) -> list[dict]:
    """(task, kernel, the GPU's status) for every kernel of the three corpora."""
    rows: list[dict] = []
    for kernel in sorted((ROOT / "examples" / "kernels").glob("*/correct.py")):
        rows.append(
            {
                "task": str(ROOT / "examples" / "tasks" / f"{kernel.parent.name}.py"),
                "kernel": str(kernel),
                "gpu": "ok",
                "name": f"examples/{kernel.parent.name}/correct.py",
            }
        )
    # the adversarial battery's honest corpus: idioms the policy must let through, each named after its task
    honest = {
        "conv": "conv2d_activation",
        "elementwise": "elementwise_chain",
        "gemm": "gemm_epilogue",
        "layernorm": "layernorm",
        "mlp": "mlp",
        "rmsnorm": "rmsnorm_bf16",
        "softmax": "row_softmax",
        "sum_reduction": "sum_reduction",
    }
    for kernel in sorted((ROOT / "tests" / "adversarial" / "honest_corpus").glob("*.py")):
        prefix = max((p for p in [*honest, "scale_relu"] if kernel.stem.startswith(p + "_")), key=len, default=None)
        if prefix is None:
            continue
        task = (
            ROOT / "tests" / "executor" / "data" / "scale_relu_task.py"
            if prefix == "scale_relu"
            else ROOT / "examples" / "tasks" / f"{honest[prefix]}.py"
        )
        rows.append({"task": str(task), "kernel": str(kernel), "gpu": "ok", "name": f"honest/{kernel.name}"})
    measured = {}
    if (OURS / "truth.jsonl").is_file():
        measured = {r["kernel"]: r["h200_status"] for r in map(json.loads, (OURS / "truth.jsonl").open())}
    for kernel in sorted(OURS.glob("level*/*/*.py")):
        level, problem = kernel.parent.parent.name, kernel.parent.name
        found = sorted((kernelbench / level).glob(f"{problem}_*.py"))
        if not found:
            continue
        relative = str(kernel.relative_to(OURS))
        rows.append(
            {
                "task": str(found[0]),
                "kernel": str(kernel),
                "name": f"ours/{relative}",
                "gpu": measured.get(relative, "unmeasured"),
            }
        )
    if shared is not None and (shared / "truth.jsonl").is_file():
        again = {}
        if REMEASURED.is_file():
            again = {r["kernel"]: r for r in map(json.loads, REMEASURED.read_text().splitlines())}
        seen: set[str] = set()
        for line in (shared / "truth.jsonl").read_text().splitlines():
            row = json.loads(line)
            row = again.get(row["kernel"], row)
            code = (shared / row["kernel"]).read_text()
            if code in seen:
                continue
            seen.add(code)
            rows.append(
                {
                    "task": str(kernelbench / "level2" / row["problem"]),
                    "kernel": str(shared / row["kernel"]),
                    "name": f"shared/{row['kernel']}",
                    "gpu": row["h200_status"],
                }
            )
    if only:
        rows = [r for r in rows if any(part in r["name"] for part in only)]
    return rows


def run_one(row: dict, cache: Path, timeout_s: float) -> dict:
    env = {**os.environ, "TRITON_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--one", row["task"], row["kernel"]],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=env,
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"took over {timeout_s:.0f} s"}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1][:200]}
    return json.loads(lines[-1])


def table(results: list[dict]) -> str:
    lines = [f"{'kernel':58} {'GPU':11} {'found':8} {'check s':>8} {'pass s':>7}  notes"]
    false = []
    for r in results:
        found = "error" if "error" in r else "GAP" if r["gaps"] else "failed" if r.get("failed") else "covered"
        found = "stopped" if found == "covered" and r.get("stopped") else found
        if r.get("gaps") and r["gpu"] in ("ok", "unmeasured"):
            false.append(r["name"])
        note = r.get("error") or r.get("failed") or r.get("stopped") or "; ".join(r.get("notes", []))
        lines.append(
            f"{r['name']:58} {r['gpu']:11} {found:8} {r.get('check_s', 0):8.3f} {r.get('pass_s', 0):7.1f}  {note[:90]}"
        )
    checks = sorted(r["check_s"] for r in results if "check_s" in r)
    median = checks[len(checks) // 2] if checks else 0.0
    lines.append(
        f"{len(results)} kernels; honest kernels with a gap: {len(false)} {false or ''}; errors: "
        f"{sum('error' in r for r in results)}; the check failed on {sum(bool(r.get('failed')) for r in results)}; "
        f"not followed to the end: {sum(bool(r.get('stopped')) for r in results)}; check time median {median:.3f} s, "
        f"max {max(checks, default=0):.3f} s"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--one", nargs=2, metavar=("TASK", "KERNEL"), help=argparse.SUPPRESS)
    parser.add_argument("--kernelbench", type=Path, default=ROOT.parent / "shared" / "data" / "kernelbench")
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data" / "gpu-truth")
    parser.add_argument("--only", nargs="*", default=[], help="kernels whose name holds one of these")
    parser.add_argument("--cache", type=Path, help="Triton's cache (default: a temporary folder)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per kernel")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(*args.one)))
        return
    if not args.kernelbench.is_dir():
        sys.exit(f"KernelBench's problems are not at {args.kernelbench}: pass --kernelbench DIR")
    shared = args.shared if args.shared.is_dir() else None
    rows = corpus(args.kernelbench, shared, args.only)
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        cache = args.cache or Path(scratch)
        for row in rows:
            result = {**row, **run_one(row, cache, args.timeout)}
            print(
                f"{row['name']}: {'error ' + result['error'] if 'error' in result else len(result['gaps'])} gap(s)",
                file=sys.stderr,
                flush=True,
            )
            results.append(result)
            if args.json is not None:
                args.json.write_text(json.dumps(results, indent=2))
    print(table(results))


if __name__ == "__main__":
    main()
