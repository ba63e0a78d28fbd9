"""Measure the evaluator: per-candidate cost and its breakdown, repeatability, agreement with an
independent do_bench, concurrency, the CPU path, and the evaluator's memory over many evaluations.

    python benchmarks/evaluator_bench.py                      # everything this machine can run
    python benchmarks/evaluator_bench.py --only cost,repeat   # some sections
    python benchmarks/evaluator_bench.py --json results.json  # also write every number

On a GPU it uses the cuda backend; without one, the compile + interpret path (no timing).
The table printed last is what benchmarks/README.md records.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adaexplore.config import ExecutorConfig, Settings  # noqa: E402
from adaexplore.executor import Evaluation, EvaluationOptions, Evaluator, Status, load_task  # noqa: E402

SECTIONS = ("cost", "repeat", "backtoback", "dobench", "references", "concurrency", "cpu", "memory")


def rss_kib(pid: int | str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def judge_pids() -> list[int]:
    me = str(os.getpid())
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "--role judge" in cmdline and stat.split(") ")[1].split()[1] == me:
            found.append(int(entry.name))
    return found


def own_overhead(result: Evaluation) -> float | None:
    """Seconds of an evaluation that are neither the candidate's compile nor its kernels running."""
    if result.timing is None:
        return None
    candidate = result.timing.candidate
    calls = candidate.n + candidate.warmup_n + 5 + 1  # timed calls, warm-up, trials, the audit call
    kernels = calls * result.timing.candidate.median_ms / 1e3
    return result.phases["total"] - result.phases.get("compile", 0.0) - kernels


def clear_triton_cache(home: Path, *, keep_launchers: bool) -> None:
    """Empty Triton's cache so the candidate compiles again. Its C launchers depend only on the kinds of a
    kernel's arguments (not on dtypes or constexpr values), so in a search most candidates find theirs
    built; `keep_launchers` keeps them, as a search would."""
    root = home / "cache" / "triton"
    for entry in root.iterdir() if root.exists() else []:
        names = [p.name for p in entry.iterdir()] if entry.is_dir() else []
        if keep_launchers and any(n.startswith(("__triton_launcher", "cuda_utils")) for n in names):
            continue
        shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink(missing_ok=True)


COST_ROWS = ("cached compile", "fresh kernel", "fresh kernel and launcher")


async def section_cost(ev: Evaluator, task, code: str, home: Path, evals: int) -> dict[str, Any]:
    """Warm evaluations of one candidate, reference cached, in turn: with Triton's compile cache warm;
    with the kernel compiling again but its launcher built (a new kernel whose arguments are of kinds
    seen before); and with both built again (the first kernel of its argument kinds)."""
    await ev.evaluate(task, code)  # fills the reference-timing cache
    rows: dict[str, list[dict[str, float]]] = {label: [] for label in COST_ROWS}
    for index in range(evals):
        label = COST_ROWS[index % len(COST_ROWS)]
        if label != "cached compile":
            clear_triton_cache(home, keep_launchers=label == "fresh kernel")
        await ev.wait_warm()  # spares started and warmed up, as between search steps
        result = await ev.evaluate(task, code)
        assert result.status is Status.ok, result.message
        row = dict(result.phases)
        row["own_overhead"] = own_overhead(result) or 0.0
        rows[label].append(row)
    summary = {}
    for label, items in rows.items():
        keys = sorted({k for item in items for k in item})
        summary[label] = {k: statistics.median(item.get(k, 0.0) for item in items) for k in keys}
    return summary


async def section_repeat(ev: Evaluator, task, code: str, times: int, *, settle: bool) -> dict[str, Any]:
    """The same candidate `times` times: with the pool warm before each (`settle`), or back to back, so
    that replacement workers start and warm up while the next candidates are measured."""
    speedups, medians, waits, spread = [], [], [], []
    for _ in range(times):
        if settle:
            await ev.wait_warm()
        result = await ev.evaluate(task, code)
        assert result.status is Status.ok and result.timing is not None, result.message
        speedups.append(result.timing.speedup)
        medians.append(result.timing.candidate.median_ms)
        waits.append(result.phases.get("wait_device", 0.0))
        spread.append(
            {
                "p10_ms": result.timing.candidate.p10_ms,
                "p90_ms": result.timing.candidate.p90_ms,
                "n": result.timing.candidate.n,
                "host_bound_calls": result.timing.host_bound_calls,
            }
        )
    return {
        "within_evaluation": spread,
        "speedups": speedups,
        "candidate_median_ms": medians,
        "wait_device_s": waits,
        "max_over_min": max(speedups) / min(speedups),
    }


def section_dobench(task_path: Path, kernel_path: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(Path(__file__).parent / "independent_dobench.py"), str(task_path), str(kernel_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


async def section_concurrency(ev: Evaluator, task, code: str, home: Path, count: int) -> dict[str, Any]:
    """`count` candidates needing a fresh compile each, submitted at once, against one after another."""
    shutil.rmtree(home / "cache" / "triton", ignore_errors=True)
    start = time.perf_counter()
    for _ in range(count):
        shutil.rmtree(home / "cache" / "triton", ignore_errors=True)
        await ev.evaluate(task, code)
    serial = time.perf_counter() - start
    shutil.rmtree(home / "cache" / "triton", ignore_errors=True)
    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(count):
            tg.start_soon(ev.evaluate, task, code)
    concurrent = time.perf_counter() - start
    return {"count": count, "serial_s": serial, "concurrent_s": concurrent}


async def section_memory(ev: Evaluator, task, code: str, evals: int) -> dict[str, Any]:
    samples = []
    for index in range(evals + 1):
        if index % max(1, evals // 10) == 0:
            samples.append(
                {
                    "evaluations": index,
                    "evaluator_rss_mib": rss_kib() / 1024,
                    "judge_rss_mib": [rss_kib(p) / 1024 for p in judge_pids()],
                }
            )
        if index < evals:
            await ev.evaluate(task, code)
    return {"samples": samples}


async def section_references(task, code: str, processes: int, retimes: int) -> dict[str, Any]:
    """The reference's timing, which every speedup of a process divides by: in `processes` evaluators one
    after another (each a new judge process, nothing cached), and `retimes` times again in the last one
    (the same judge). Tells a spread between judge processes from a spread between measurements."""

    def row(result: Evaluation) -> dict[str, float]:
        assert result.timing is not None, result.message
        ref = result.timing.reference
        return {"median_ms": ref.median_ms, "p10_ms": ref.p10_ms, "p90_ms": ref.p90_ms, "n": ref.n}

    across, within = [], []
    for index in range(processes):
        home = Path(tempfile.mkdtemp(prefix="adaexplore-bench-ref-"))
        try:
            async with Evaluator(Settings(home=home, executor=EXECUTOR)) as ev:
                await ev.wait_warm()
                across.append(row(await ev.evaluate(task, code)))
                if index == processes - 1:
                    for _ in range(retimes):
                        await ev.wait_warm()
                        within.append(row(await ev.evaluate(task, code, EvaluationOptions(fresh_reference=True))))
        finally:
            shutil.rmtree(home, ignore_errors=True)
    medians = [r["median_ms"] for r in across]
    again = [r["median_ms"] for r in within]
    return {
        "across_processes": across,
        "within_one_process": within,
        "across_max_over_min": max(medians) / min(medians),
        "within_max_over_min": max(again) / min(again) if again else None,
    }


# What every evaluator of this benchmark runs with; `--timing-budget-ms` replaces it.
EXECUTOR = ExecutorConfig()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", type=Path, default=ROOT / "examples/tasks/gemm_epilogue.py")
    parser.add_argument("--kernel", type=Path, default=ROOT / "examples/kernels/gemm_epilogue/correct.py")
    parser.add_argument("--cpu-task", type=Path, default=ROOT / "examples/tasks/row_softmax.py")
    parser.add_argument("--cpu-kernel", type=Path, default=ROOT / "examples/kernels/row_softmax/correct.py")
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated sections of {SECTIONS}")
    parser.add_argument("--evals", type=int, default=12, help="evaluations in the cost section (a third in each row)")
    parser.add_argument("--memory-evals", type=int, default=500)
    parser.add_argument("--json", type=Path, help="write all numbers here")
    parser.add_argument(
        "--timing-budget-ms", type=float, help="strict timing's measured time per model (default: the setting's)"
    )
    args = parser.parse_args()
    global EXECUTOR
    if args.timing_budget_ms is not None:
        EXECUTOR = ExecutorConfig(timing_budget_ms=args.timing_budget_ms)
    only = set(args.only.split(","))
    home = Path(tempfile.mkdtemp(prefix="adaexplore-bench-"))
    settings = Settings(home=home, executor=EXECUTOR)
    results: dict[str, Any] = {}
    task, code = load_task(args.task), args.kernel.read_text()
    async with Evaluator(settings) as ev:
        assert ev.environment is not None
        gpu = ev.environment.has_gpu
        results["environment"] = ev.environment.model_dump()
        results["timing_budget_ms"] = EXECUTOR.timing_budget_ms
        if gpu and "cost" in only:
            results["cost"] = await section_cost(ev, task, code, home, args.evals)
        if gpu and "repeat" in only:
            results["repeat"] = await section_repeat(ev, task, code, 5, settle=True)
        if gpu and "backtoback" in only:
            results["backtoback"] = await section_repeat(ev, task, code, 5, settle=False)
        if gpu and "dobench" in only:
            await ev.wait_warm()
            ours = await ev.evaluate(task, code)
            assert ours.timing is not None, ours.message
            independent = section_dobench(args.task, args.kernel)
            results["dobench"] = {
                "ours": ours.timing.speedup,
                **independent,
                "relative_difference": ours.timing.speedup / independent["speedup"] - 1,
            }
        if gpu and "concurrency" in only:
            results["concurrency"] = await section_concurrency(ev, task, code, home, 4)
        if "cpu" in only:
            cpu_task, cpu_code = load_task(args.cpu_task), args.cpu_kernel.read_text()
            walls = []
            for _ in range(6):
                await anyio.sleep(4)  # a warm pool, as between steps
                start = time.perf_counter()
                result = await ev.evaluate(cpu_task, cpu_code, EvaluationOptions(backend="interpret" if gpu else None))
                walls.append(time.perf_counter() - start)
                assert result.status is Status.ok, result.message
            results["cpu"] = {"wall_s": walls, "median_s": statistics.median(walls[1:])}
        if "memory" in only:
            mem_task, mem_code = (task, code) if gpu else (load_task(args.cpu_task), args.cpu_kernel.read_text())
            results["memory"] = await section_memory(ev, mem_task, mem_code, args.memory_evals)
    shutil.rmtree(home, ignore_errors=True)
    if results["environment"]["gpus"] and "references" in only:
        results["references"] = await section_references(task, code, processes=4, retimes=3)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    print_table(results)


def print_table(results: dict[str, Any]) -> None:
    env = results["environment"]
    print(
        f"\nenvironment: {', '.join(env['gpus']) or 'no GPU'}; torch {env['torch']}, triton {env['triton']}, "
        f"python {env['python']}, driver {env['driver']}; strict timing budget {results['timing_budget_ms']:g} ms"
    )
    if "cost" in results:
        for label, row in results["cost"].items():
            parts = ", ".join(f"{k} {v:.3f}" for k, v in row.items())
            print(f"cost, {label} (median s): {parts}")
    for key, label in (("repeat", "repeat x5, pool warm"), ("backtoback", "repeat x5, back to back")):
        if key in results:
            r = results[key]
            print(
                f"{label}: speedups {', '.join(f'{s:.3f}' for s in r['speedups'])}; "
                f"max/min {r['max_over_min']:.4f}; waited for the device "
                f"{', '.join(f'{w:.2f}' for w in r['wait_device_s'])} s"
            )
    if "dobench" in results:
        d = results["dobench"]
        print(
            f"do_bench: ours {d['ours']:.3f}x, independent {d['speedup']:.3f}x "
            f"(ref {d['reference_ms']:.4f} ms, candidate {d['candidate_ms']:.4f} ms); "
            f"difference {d['relative_difference']:+.2%}"
        )
    if "references" in results:
        r = results["references"]
        across = ", ".join(f"{x['median_ms']:.4f}" for x in r["across_processes"])
        within = ", ".join(f"{x['median_ms']:.4f}" for x in r["within_one_process"])
        print(
            f"reference median (ms) in {len(r['across_processes'])} judge processes: {across} "
            f"(max/min {r['across_max_over_min']:.3f}); timed again in the last: {within}"
            + (f" (max/min {r['within_max_over_min']:.3f})" if r["within_max_over_min"] else "")
        )
    if "concurrency" in results:
        c = results["concurrency"]
        print(
            f"concurrency: {c['count']} fresh-compile candidates serial {c['serial_s']:.2f} s, "
            f"concurrent {c['concurrent_s']:.2f} s"
        )
    if "cpu" in results:
        print(f"cpu path (warm): median {results['cpu']['median_s']:.2f} s over {len(results['cpu']['wall_s']) - 1}")
    if "memory" in results:
        first, last = results["memory"]["samples"][0], results["memory"]["samples"][-1]
        print(
            f"memory: evaluator RSS {first['evaluator_rss_mib']:.0f} -> {last['evaluator_rss_mib']:.0f} MiB over "
            f"{last['evaluations']} evaluations; judge {first['judge_rss_mib']} -> {last['judge_rss_mib']} MiB"
        )


if __name__ == "__main__":
    anyio.run(main)
