"""Split-precision GEMMs for KernelBench Level 2 problem 12 (x @ W^T over in_features = 8192), judged in strict mode
at the task's full sizes: the bf16 and fp16 halves of `tests/executor/data/split_gemm_kernels.py` (honest ones, and
ones chained on one accumulator, truncated, or missing a product), and optionally the hand-made 3xTF32 GEMMs of the
shared corpus, whose H200 verdicts are known. On a GPU it gives their verdicts and the normwise error of each trial
(what the CPU path's check at the full reduction length estimates from a sample of the outputs); on a machine
without one, the CPU path's verdicts and that check's flags, for the same table.

    python3 -m benchmarks.precision_at_length                      # writes $OUT/precision_at_length.jsonl
    python3 -m benchmarks.precision_at_length --corpus DIR         # DIR: the shared gpu-truth folder (level2/12/)
    python3 -m benchmarks.precision_at_length --out FILE --only bf16

Resumes where it stopped: a kernel already in the output file (same code, same kind of machine) is not judged again.
The table comes last.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import sys
import time
from pathlib import Path

import anyio

from adaexplore.config import Settings
from adaexplore.executor import EvaluationOptions, Evaluator, code_hash, load_task

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "executor" / "data"
TASK = DATA / "gemm_leaky_task.py"  # problem 12 at its full sizes (its SMALL_SIZES serve the CPU path alone)
# the corpus's hand-made 3xTF32 GEMMs of problem 12 and their H200 verdicts (truth.jsonl)
CORPUS_KERNELS = {"3.py": "mismatch", "4.py": "mismatch", "6.py": "mismatch", "8.py": "ok", "10.py": "mismatch"}


def _variants() -> dict[str, str]:
    spec = importlib.util.spec_from_file_location("split_gemm_kernels", DATA / "split_gemm_kernels.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {name: module.kernel(*v) for name, v in {**module.HONEST, **module.LOSSY}.items()}


def kernels(corpus: Path | None, only: str | None) -> list[tuple[str, str, str | None]]:
    """(name, code, the H200's verdict where the corpus knows it)."""
    found: list[tuple[str, str, str | None]] = [(name, code, None) for name, code in _variants().items()]
    if corpus is not None:
        folder = corpus / "level2" / "12"
        if not folder.is_dir():
            sys.exit(f"no level2/12/ in {corpus}: give the shared gpu-truth folder")
        found += [(f"corpus/12/{n}", (folder / n).read_text(), v) for n, v in CORPUS_KERNELS.items()]
    return [k for k in found if only is None or only in k[0]]


def _row(name: str, code: str, known: str | None, result: object, seconds: float, gpu: bool) -> dict:
    trials = result.correctness.trials if result.correctness else []  # type: ignore[attr-defined]
    return {
        "kernel": name,
        "code_hash": code_hash(code),
        "machine": "gpu" if gpu else "cpu",
        "status": result.status.value,  # type: ignore[attr-defined]
        "h200_known": known,
        "norm_rel_errors": [t.norm_rel_error for t in trials],
        "max_scaled_errors": [t.max_scaled_error for t in trials],
        "precision_flags": [
            f"{f.code}: {f.message}"
            for f in result.audit.flags  # type: ignore[attr-defined]
            if f.code.startswith("precision_")
        ],
        "precision_s": result.phases.get("precision"),  # type: ignore[attr-defined]
        "seconds": round(seconds, 1),
        "message": result.message[:600],  # type: ignore[attr-defined]
    }


def _full_length_error(row: dict) -> str:
    """The normwise error at K = 8192: on a GPU every trial's, on the CPU path its check's (from a sample)."""
    if row["machine"] == "gpu":
        errors = [e for e in row["norm_rel_errors"] if e is not None]
        return f"{min(errors):.3g} .. {max(errors):.3g}" if errors else "-"
    found = re.search(
        r"normwise error ([0-9.e+-]+) \(± ([0-9.e+-]+)", " ".join([row["message"], *row["precision_flags"]])
    )
    if found:
        return f"{float(found.group(1)):.3g} ± {float(found.group(2)):.2g}"
    return "failed at K = 17" if row["status"] != "ok" else "-"


def table(rows: list[dict]) -> str:
    lines = [
        f"{'kernel':18} {'machine':7} {'status':9} {'H200 known':10} {'||err||/||ref|| at full K':26} {'check s':>7}"
    ]
    for r in rows:
        check = f"{r['precision_s']:.1f}" if r.get("precision_s") is not None else "-"
        flags = ",".join(f.split(":")[0].removeprefix("precision_") for f in r["precision_flags"])
        lines.append(
            f"{r['kernel']:18} {r['machine']:7} {r['status']:9} {r['h200_known'] or '-':10} "
            f"{_full_length_error(r):26} {check:>7}  {flags}"
        )
    return "\n".join(lines)


async def main(corpus: Path | None, only: str | None, out: Path) -> None:
    done: dict[tuple[str, str, str], dict] = {}
    if out.is_file():
        for line in out.read_text().splitlines():
            row = json.loads(line)
            done[(row["kernel"], row["code_hash"], row["machine"])] = row
    task = load_task(TASK)
    rows = []
    async with Evaluator(Settings()) as evaluator:
        environment = evaluator.environment
        gpu = bool(environment is not None and environment.has_gpu)
        machine = "gpu" if gpu else "cpu"
        todo = kernels(corpus, only)
        for i, (name, code, known) in enumerate(todo, 1):
            key = (name, code_hash(code), machine)
            if key in done:
                rows.append(done[key])
                continue
            started = time.perf_counter()
            result = await evaluator.evaluate(task, code, EvaluationOptions(mode="strict"))
            row = _row(name, code, known, result, time.perf_counter() - started, gpu)
            rows.append(row)
            with out.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(f"[{i}/{len(todo)}] {name}: {row['status']} ({row['seconds']} s)", flush=True)
    print(table(rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, help="the shared gpu-truth folder, for problem 12's 3xTF32 kernels")
    parser.add_argument("--only", help="kernels whose name holds this")
    parser.add_argument("--out", type=Path, help="the JSONL file (default: $OUT/precision_at_length.jsonl)")
    args = parser.parse_args()
    out = args.out or Path(os.environ.get("OUT", ".")) / "precision_at_length.jsonl"
    anyio.run(main, args.corpus, args.only, out)
