"""A referee for the suite's speedups: the pass-through candidate and the reference of a few problems, timed in
a plain subprocess with none of the evaluator's code, two ways:

  (a) `triton.testing.do_bench`, median (TF32 off, as strict mode);
  (b) KernelBench's protocol as its documentation describes it: CUDA events around each call, the L2 cache
      flushed (a 256 MiB buffer written) before each of 100 trials after a short warm-up, the mean
      (PyTorch's TF32 defaults: cuDNN may use it, matmul not).

and compared with the strict-mode and kernelbench-mode speedups of results.jsonl (target: within 3 %).

    python benchmarks/kernelbench_referee.py --results results.jsonl                 # 10 problems spread over it
    python benchmarks/kernelbench_referee.py --results results.jsonl --ids 2,12 --json referee.jsonl

GPU only: it refuses to run without one.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.03
FLUSH_BYTES = 256 << 20


# the child: a plain process, torch and triton only -----------------------------------------------
def _load(name: str, path: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _kernelbench_mean_ms(fn: Any, trials: int = 100, warmup: int = 3) -> float:
    import torch

    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(trials):
        flush.zero_()  # the L2 holds this buffer now, not the model's data
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sum(times) / len(times)


def child(problem_path: str, candidate_path: str) -> None:
    import torch
    import triton

    problem, candidate = _load("problem", problem_path), _load("candidate", candidate_path)
    torch.manual_seed(42)
    init = problem.get_init_inputs()
    torch.manual_seed(42)
    reference = problem.Model(*init).cuda()
    torch.manual_seed(42)
    new = candidate.ModelNew(*init).cuda()
    torch.manual_seed(42)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
    result: dict[str, float] = {}
    with torch.no_grad():
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = False, False
        for label, model in (("reference", reference), ("candidate", new)):
            result[f"dobench_{label}_ms"] = triton.testing.do_bench(
                lambda m=model: m(*inputs), warmup=100, rep=500, return_mode="median"
            )
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = False, True
        for label, model in (("reference", reference), ("candidate", new)):
            result[f"kernelbench_{label}_ms"] = _kernelbench_mean_ms(lambda m=model: m(*inputs))
    result["dobench_speedup"] = result["dobench_reference_ms"] / result["dobench_candidate_ms"]
    result["kernelbench_speedup"] = result["kernelbench_reference_ms"] / result["kernelbench_candidate_ms"]
    print(json.dumps(result), flush=True)


# the parent ---------------------------------------------------------------------------------------
def spread_ids(ids: list[int], count: int) -> list[int]:
    """`count` of `ids` (sorted), evenly spaced over them, first and last included."""
    ordered = sorted(set(ids))
    if count >= len(ordered):
        return ordered
    if count <= 1:
        return ordered[:count]
    return sorted({ordered[round(i * (len(ordered) - 1) / (count - 1))] for i in range(count)})


def ours(rows: list[dict[str, Any]], problem: int, mode: str) -> float | None:
    """The suite's speedup of a problem in a mode: its repeat evaluation's, else its first's."""
    found = {r["which"]: r.get("speedup") for r in rows if r["problem"] == problem and r["mode"] == mode}
    return found.get("repeat") or found.get("first")


def referee_main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--level-dir", type=Path, default=ROOT.parent / "shared" / "data" / "kernelbench" / "level2")
    parser.add_argument("--results", type=Path, help="the suite's results.jsonl to compare with")
    parser.add_argument("--count", type=int, default=10, help="problems, spread over the suite")
    parser.add_argument("--ids", help="these problems instead, e.g. 2,12,40-42")
    parser.add_argument("--json", type=Path, help="append one row per problem here")
    parser.add_argument("--timeout-s", type=float, default=300.0, help="per problem")
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("the referee times on a CUDA GPU, and none is visible here; run it on a GPU machine")
    sys.path.insert(0, str(ROOT))
    from benchmarks.kernelbench_candidates import parse_ids, pass_through, read_problems
    from benchmarks.kernelbench_suite import read_rows

    rows = read_rows(args.results) if args.results else []
    problems = {p.id: p for p in read_problems(Path(args.level_dir).resolve())}
    chosen = parse_ids(args.ids)
    pool = [r["problem"] for r in rows if r.get("status") == "ok"] or list(problems)
    picked = sorted(chosen) if chosen else spread_ids([i for i in pool if i in problems], args.count)
    header = (
        f"{'id':>3} {'name':<40} {'do_bench':>9} {'strict':>8} {'diff':>7}   {'KB mean':>8} {'kbmode':>8} {'diff':>7}"
    )
    print(header)
    within, compared = 0, 0
    with tempfile.TemporaryDirectory(prefix="adaexplore-referee-") as scratch:
        for pid in picked:
            problem = problems[pid]
            candidate = Path(scratch) / f"candidate_{pid}.py"
            candidate.write_text(pass_through(problem.source()))
            done = subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), "--child", str(problem.path), str(candidate)],
                capture_output=True,
                text=True,
                timeout=args.timeout_s,
                cwd=scratch,
            )
            if done.returncode != 0:
                print(f"{pid:>3} {problem.name[:40]:<40} failed: {done.stderr.strip()[-300:]}")
                continue
            measured = json.loads(done.stdout.strip().splitlines()[-1])
            row: dict[str, Any] = {"problem": pid, "name": problem.name, **measured}
            cells = []
            for theirs_key, mode in (("dobench_speedup", "strict"), ("kernelbench_speedup", "kernelbench")):
                mine = ours(rows, pid, mode)
                diff = mine / measured[theirs_key] - 1 if mine else None
                row[f"{mode}_speedup"], row[f"{mode}_difference"] = mine, diff
                if diff is not None:
                    compared += 1
                    within += abs(diff) <= TARGET
                cells.append(
                    f"{measured[theirs_key]:9.4f} {mine or float('nan'):8.4f} "
                    + (f"{diff:+7.2%}" if diff is not None else f"{'-':>7}")
                )
            print(f"{pid:>3} {problem.name[:40]:<40} {cells[0]}   {cells[1]}", flush=True)
            if args.json:
                with args.json.open("a") as handle:
                    handle.write(json.dumps(row) + "\n")
    if compared:
        verdict = "pass" if within == compared else "MISS"
        print(f"within {TARGET:.0%}: {within} of {compared} comparisons ({verdict})")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
    else:
        referee_main()
