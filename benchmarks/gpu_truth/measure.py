"""Measure this corpus on a GPU: every kernel under level1/, level2/ and level3/ in strict mode at the task's full
sizes, one row per kernel in truth.jsonl (the schema of the shared corpus, `../shared/data/gpu-truth/`), with the
GPU's share of the speed of light beside it.

    python benchmarks/gpu_truth/measure.py                  # on a GPU machine; resumes where it stopped
    python benchmarks/gpu_truth/measure.py --only level2/12  # some kernels (several: level2/12/,level2/76/)
    python benchmarks/gpu_truth/measure.py --kernelbench DIR # KernelBench's levels elsewhere (default: the shared
                                                             # data beside the checkout)
    python benchmarks/gpu_truth/measure.py --parallel 4      # evaluations under way at once
    python benchmarks/gpu_truth/measure.py --stop-after 540  # start no evaluation after 540 s (a call limited to
                                                             # 10 minutes ends with its table and provenance)
    python benchmarks/gpu_truth/measure.py --list            # what a run would measure, by level; no GPU needed
    python benchmarks/gpu_truth/measure.py --only level2/12/bf16x3_inloop --mode paper --out v.jsonl
                                                             # another mode's tolerance, its rows elsewhere

Each row: `level`, `problem` (the KernelBench file name), `kernel` (its path here), `h200_status` (on another GPU:
`gpu` and `status`; truth.jsonl takes an H200's rows alone), `strict_speedup`
(None unless ok), `kernel_ms` and `eager_ms` (medians of strict timing; with `--mode`, of that mode's, and a
`mode` field says which), `sol_fraction`, the `message` of a kernel
that was not ok, and `code_hash`, so that a kernel edited since is measured again. `provenance.json` records the
machine and versions of the last run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from adaexplore.config import Settings
from adaexplore.errors import TaskError
from adaexplore.executor import EvaluationOptions, Evaluator, code_hash, load_task

HERE = Path(__file__).resolve().parent
KERNELBENCH = HERE.parents[2] / "shared" / "data" / "kernelbench"


def kernels(only: str | None, kernelbench: Path = KERNELBENCH, skip: str | None = None) -> list[tuple[int, Path, Path]]:
    """(level, task file, kernel file) for each kernel of the corpus (of those whose path holds one of the
    comma-separated parts of `only`, and not `skip`)."""
    parts = [part for part in (only or "").split(",") if part]
    found = []
    for level in (1, 2, 3):
        if not (HERE / f"level{level}").is_dir():
            continue
        for folder in sorted((HERE / f"level{level}").iterdir(), key=lambda p: int(p.name)):
            chosen = [
                k
                for k in sorted(folder.glob("*.py"))
                if (not parts or any(p in str(k.relative_to(HERE)) for p in parts))
                and (skip is None or skip not in str(k.relative_to(HERE)))
            ]
            if not chosen:
                continue
            task = next(kernelbench.glob(f"level{level}/{folder.name}_*.py"), None)
            if task is None:
                sys.exit(
                    f"no KernelBench problem {folder.name} in {kernelbench / f'level{level}'}: give the folder of "
                    "KernelBench's levels with --kernelbench"
                )
            found.extend((level, task, kernel) for kernel in chosen)
    return found


def broad_first(todo: list[Any], breadth: int) -> list[Any]:
    """Every problem's first `breadth` kernels before any problem's others (problem by problem within each pass),
    so that a run cut short has touched every problem and builds each problem's reference once a pass; items are
    (level, task, kernel, key) in problem order. `breadth` 0 keeps the order."""
    if breadth <= 0:
        return todo
    rank: dict[Path, int] = {}
    ordered = []
    for index, item in enumerate(todo):
        ordered.append((rank.get(item[1], 0) >= breadth, index, item))
        rank[item[1]] = rank.get(item[1], 0) + 1
    return [item for *_, item in sorted(ordered, key=lambda t: (t[0], t[1]))]


async def main(
    only: str | None,
    out: Path,
    kernelbench: Path,
    parallel: int,
    skip: str | None,
    mode: str = "strict",
    stop_after: float | None = None,
    listing: bool = False,
    breadth: int = 0,
) -> None:
    done = {}
    if out.is_file():
        for line in filter(str.strip, out.read_text().splitlines()):
            row = json.loads(line)
            done[(row["kernel"], row["code_hash"])] = row
    chosen = [
        (level, task, kernel, (str(kernel.relative_to(HERE)), code_hash(kernel.read_text())))
        for level, task, kernel in kernels(only, kernelbench, skip)
    ]
    todo = [item for item in chosen if item[3] not in done]
    todo = broad_first(todo, breadth)
    if listing:
        for level in (1, 2, 3):
            picked = [item for item in chosen if item[0] == level]
            left = [item for item in todo if item[0] == level]
            problems = len({item[1] for item in picked})
            print(f"level {level}: {len(picked)} kernels of {problems} problems, {len(left)} not yet measured")
        print(f"{len(todo)} kernels to measure; results go to {out}")
        return
    rows = dict(done)
    provenance: dict[str, object] = {}
    finished = 0
    began = time.monotonic()
    async with Evaluator(Settings()) as evaluator:
        environment = evaluator.environment
        assert environment is not None
        if not environment.has_gpu:
            todo = []  # nothing to run here: said once the evaluator has closed
        elif "H200" not in environment.gpus[0] and out.resolve() == (HERE / "truth.jsonl").resolve():
            sys.exit(
                f"truth.jsonl holds an H200's verdicts and this GPU is {environment.gpus[0]}: give --out another file"
            )
        # several at a time: compiles overlap, while the device is taken by one evaluation at a time (its lock)
        limit = anyio.Semaphore(parallel)

        async def measure(level: int, task_path: Path, kernel_path: Path, key: tuple[str, str]) -> None:
            nonlocal finished
            async with limit:
                started = time.monotonic()
                if stop_after is not None and started - began > stop_after:
                    return  # past the time given: left for the next run, which resumes here
                options = EvaluationOptions(mode=mode)
                try:
                    evaluation = await evaluator.evaluate(load_task(task_path), kernel_path.read_text(), options)
                except TaskError as exc:  # the task's reference did not fit beside the others: not a verdict
                    print(f"{key[0]}: not measured: {str(exc)[:300]}", flush=True)
                    return
            timing = evaluation.timing if evaluation.status.value == "ok" else None
            gpu = evaluation.provenance.gpu or ""
            # an H200's verdict under the name the corpus's readers know; another GPU's says which GPU gave it
            said = (
                {"h200_status": evaluation.status.value}
                if "H200" in gpu
                else {"gpu": gpu, "status": evaluation.status.value}
            )
            rows[key] = {
                "level": level,
                "problem": task_path.name,
                "kernel": key[0],
                **said,
                "strict_speedup": round(timing.speedup, 4) if timing else None,
                "kernel_ms": round(timing.candidate.median_ms, 4) if timing else None,
                "eager_ms": round(timing.reference.median_ms, 4) if timing else None,
                "sol_fraction": round(evaluation.sol_fraction, 4) if evaluation.sol_fraction is not None else None,
                "message": None if timing else evaluation.message[:400],
                "code_hash": key[1],
                "seconds": round(time.monotonic() - started, 2),
                # where the evaluation's time went (the judge's and the candidate's phases), to tell what a faster
                # measurement must cut
                "phases": {name: round(seconds, 3) for name, seconds in evaluation.phases.items()},
                # the verdict's warnings (faster_than_light: measured under the task's speed of light)
                "warnings": [f.code for f in evaluation.audit.flags if f.severity == "warn"],
            }
            if mode != "strict":
                rows[key]["mode"] = mode
            provenance.update(evaluation.provenance.model_dump())
            if evaluation.status.value == "infra_error":  # adaexplore's own failure says nothing of the kernel
                del rows[key]
                print(f"{key[0]}: infra_error, not recorded: {evaluation.message[:600]}", flush=True)
                return
            finished += 1
            print(
                f"[{finished}/{len(todo)} {time.monotonic() - began:.0f}s] {key[0]}: {evaluation.status.value} "
                f"{rows[key]['strict_speedup']}",
                flush=True,
            )
            out.write_text("".join(json.dumps(r) + "\n" for r in rows.values()))

        async with anyio.create_task_group() as tg:
            for item in todo:
                tg.start_soon(measure, *item)
    if not environment.has_gpu:
        sys.exit("the corpus is measured on a GPU and this machine has none; --list says what a run would measure")
    if provenance:
        fields = ("gpu", "driver", "cuda", "torch", "triton", "python")
        (out.parent / "provenance.json").write_text(
            json.dumps({k: provenance.get(k) for k in fields} | {"date": time.strftime("%Y-%m-%d")}, indent=2)
        )
    asked = {item[3][0] for item in todo}
    show([row for key, row in rows.items() if key[0] in asked])
    phase_totals([row for key, row in rows.items() if key[0] in asked])
    left = [item for item in todo if item[3] not in rows]
    print(f"{len(todo) - len(left)} of {len(todo)} measured; {len(left)} left for the next run (it resumes)")


def phase_totals(rows: list[dict[str, Any]]) -> None:
    """The phases that took the most of these evaluations' time, summed over them (several run at once, so the sum
    is more than the run's wall time); an evaluation's own `total` is its wall time, not a phase."""
    totals: dict[str, float] = {}
    for row in rows:
        for name, seconds in (row.get("phases") or {}).items():
            if name != "total":
                totals[name] = totals.get(name, 0.0) + seconds
    if totals:
        spent = sum(float(row.get("seconds") or 0.0) for row in rows)
        top = sorted(totals.items(), key=lambda kv: -kv[1])[:10]
        by_phase = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in top)
        print(f"{len(rows)} evaluations, {spent:.0f} s in all; by phase: {by_phase}")


def show(rows: list[dict[str, object]]) -> None:
    """The kernels measured now, one line each: status, times, speedup, share of the speed of light, warnings."""
    print(f"{'kernel':34s} {'status':9s} {'ms':>8} {'eager':>8} {'speedup':>8} {'sol_frac':>8}  warnings / message")

    def cell(value: object) -> str:
        return f"{value:8.4g}" if isinstance(value, float | int) else f"{'-':>8}"

    for r in rows:
        warnings = r.get("warnings")
        note = ", ".join(warnings) if isinstance(warnings, list) and warnings else str(r.get("message") or "")[:90]
        times = " ".join(cell(r.get(key)) for key in ("kernel_ms", "eager_ms", "strict_speedup", "sol_fraction"))
        status = r.get("h200_status", r.get("status"))
        print(f"{r['kernel']!s:34s} {status!s:9s} {times}  {note}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="measure the kernels whose path holds this text (or one of several, a,b)")
    parser.add_argument("--skip", help="leave out the kernels whose path holds this text")
    parser.add_argument("--out", type=Path, default=HERE / "truth.jsonl")
    parser.add_argument(
        "--kernelbench",
        type=Path,
        default=KERNELBENCH,
        help="the KernelBench folder (default: ../shared/data/kernelbench)",
    )
    parser.add_argument("--parallel", type=int, default=4, help="evaluations under way at once (default 4)")
    parser.add_argument(
        "--mode",
        default="strict",
        choices=["strict", "kernelbench", "paper"],
        help="the protocol (default strict; paper's tolerance, 5e-2, times kernels strict finds wrong: give --out "
        "another file, truth.jsonl is strict's)",
    )
    parser.add_argument("--stop-after", type=float, help="start no evaluation after this many seconds")
    parser.add_argument("--list", action="store_true", help="say what a run would measure, by level, and stop")
    parser.add_argument(
        "--breadth",
        type=int,
        default=4,
        help="measure each problem's first N kernels before any problem's others, so that a run cut short has "
        "touched every problem (default 4; 0: problem by problem)",
    )
    args = parser.parse_args()
    if args.mode != "strict" and args.out.resolve() == (HERE / "truth.jsonl").resolve():
        sys.exit("truth.jsonl holds strict mode's rows: give --out another file for --mode " + args.mode)
    anyio.run(
        main,
        args.only,
        args.out,
        args.kernelbench,
        args.parallel,
        args.skip,
        args.mode,
        args.stop_after,
        args.list,
        args.breadth,
    )
