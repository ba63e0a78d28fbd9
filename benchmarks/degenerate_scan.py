"""Which KernelBench problems are degenerate (their reference's output a constant, float32 rounding noise, or the
same for two draws of its inputs: any kernel that writes that passes), at the small sizes adaexplore derives for
the CPU checks and at their full sizes.

    python benchmarks/degenerate_scan.py ../shared/data/kernelbench/level1 ../shared/data/kernelbench/level2
    python3 benchmarks/degenerate_scan.py kernelbench/level2 --device cuda --no-sizes --out $OUT   # on a GPU

Per problem: the small sizes the real size probe derives (`SizeProber`, in its sandboxed worker, which refuses
sizes where the task is degenerate under either of two draws of the weights and names the task where every size
makes it so), whether the task is degenerate at them under three draws of the weights (the judge draws its own),
and whether it is degenerate at its full sizes. The full-size check runs the reference in this process (run it on
tasks you trust), in float32 and float64 on two draws of the inputs, as `executor/worker/judge/_degenerate.py` decides
it for the judge, under the two draws of the weights the probe uses (the second in float32 alone): on the CPU
only where it is expected to take at most `--full-budget` CPU seconds and `--full-memory` GiB (from the
reference's FLOPs and bytes at full size, recorded on shape-only tensors), on a GPU for every problem.
`--create-task` also registers each problem as `create_task` does (a store under OUT) and records whether it names
the task degenerate. Results go to OUT/degenerate_scan-DEVICE.jsonl, one line per problem, and a run resumes from
it; the table and the summary come last. The target: no problem is degenerate at its derived small sizes unless it
is degenerate at its full sizes too.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adaexplore.config import Settings
from adaexplore.domain import Degeneracy
from adaexplore.executor.probes import SizeProber
from adaexplore.executor.tasks._small_sizes import Derivation
from adaexplore.executor.worker.cost._full_size import reference_work
from adaexplore.executor.worker.judge._degenerate import check_cost_s, full_check_fits, reference_degeneracy
from adaexplore.executor.worker.task._taskrun import load_task_module

WEIGHT_SEEDS = (42, 7, 1234)  # the draws of the weights the chosen small sizes are checked under


def _number(path: Path) -> int:
    head = path.name.split("_", 1)[0]
    return int(head) if head.isdigit() else 10**6


def _problems(dirs: list[Path], only: set[int] | None) -> list[Path]:
    files = []
    for folder in dirs:
        if not folder.is_dir():
            raise SystemExit(f"{folder} is not a folder of KernelBench problems")
        found = sorted(folder.glob("*.py"), key=_number)
        files += [p for p in found if only is None or _number(p) in only]
    return files


def _key(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def _kind(found: Degeneracy | None) -> str | None:
    if found is None:
        return None
    value = f" {found.value:.3g}" if found.kind == "constant" else ""
    return f"{found.kind}{value} (output {found.output})"


def _small(path: Path, derivation: Derivation, device: torch.device) -> dict[str, Any]:
    """What the probe chose and said, and the chosen sizes checked again under other draws of the weights."""
    chosen = derivation.chosen
    record: dict[str, Any] = {
        "sizes": derivation.sizes,
        "how": chosen.how if chosen is not None else None,
        "note": derivation.note(),
        "derive_s": round(derivation.seconds, 3),
        "attempts": len(derivation.attempts),
        "refused_degenerate": sum(1 for a in derivation.attempts if a.degenerate is not None),
        "small": _kind(derivation.degenerate),
        "small_why": derivation.degenerate.what() if derivation.degenerate is not None else None,
    }
    if not derivation.sizes:
        return record
    seen = []
    for seed in WEIGHT_SEEDS:
        try:
            module = load_task_module(str(path), derivation.sizes, name="adaexplore_scan_small")
            seen.append(_kind(reference_degeneracy(module, device, "small", init_seed=seed)))
        except Exception as exc:
            seen.append(f"error: {type(exc).__name__}: {str(exc)[:120]}")
    record["small_draws"] = seen
    return record


def _full(path: Path, device: torch.device, budget_s: float, memory: float) -> dict[str, Any]:
    """The task checked at its full sizes (on the CPU where the check's expected cost is within `budget_s` CPU
    seconds and `memory` bytes)."""
    work, _ = reference_work(str(path), None)
    cost = check_cost_s(work)
    record: dict[str, Any] = {"full_cost_s": round(cost, 1) if cost is not None else None}
    fits, why = full_check_fits(work, budget_s, memory)
    if device.type == "cpu" and not fits:
        record["full"] = "not checked"
        record["full_why"] = why
        return record
    began = time.perf_counter()
    try:
        module = load_task_module(str(path), None, name="adaexplore_scan_full")
        on_device = device.type == "cuda"
        found = reference_degeneracy(module, device, "full", on_device=on_device)
        if found is None:  # and under the second draw of the weights the size probe checks small sizes under
            found = reference_degeneracy(module, device, "full", init_seed=1234, on_device=on_device, precise=False)
    except Exception as exc:
        record["full"] = "not checked"
        record["full_why"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
        return record
    finally:
        if device.type == "cuda":
            torch.cuda.empty_cache()
    record["full"] = _kind(found) or "no"
    record["full_why"] = found.what() if found is not None else None
    record["full_s"] = round(time.perf_counter() - began, 2)
    return record


async def _created(paths: list[Path], home: Path) -> dict[str, dict[str, Any]]:
    """Each problem registered as create_task registers it: whether it names the task degenerate."""
    from adaexplore import tools

    named: dict[str, dict[str, Any]] = {}
    settings = Settings(home=home)
    async with tools.open_services(settings) as svc:
        for path in paths:
            began = time.perf_counter()
            try:
                created = await tools.create_checked_task(svc, tools.CreateTaskRequest(path=str(path)))
                named[_key(path)] = {
                    "created_degenerate": created.degenerate,
                    "create_s": round(time.perf_counter() - began, 2),
                }
            except Exception as exc:
                named[_key(path)] = {"created_degenerate": f"error: {type(exc).__name__}: {str(exc)[:160]}"}
    return named


def _table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'problem':48} {'small sizes':44} {'small':22} {'full':24} created"]
    for r in rows:
        sizes = r.get("sizes")
        shown = "-" if sizes is None else ("(own)" if not sizes else ",".join(f"{k}={v}" for k, v in sizes.items()))
        small = r.get("small") or ("-" if sizes is None else "no")
        draws = r.get("small_draws") or []
        hit = sum(1 for d in draws if d and not d.startswith("error"))
        if hit and not r.get("small"):
            small += f" ({hit}/{len(draws)} draws)"
        created = r.get("created_degenerate")
        created_text = "-" if "created_degenerate" not in r else ("degenerate" if created else "no")
        full = r.get("full", "-")
        if full == "not checked":
            full += f" ({r.get('full_why', '')[:11]})"
        lines.append(f"{r['problem'][:48]:48} {shown[:44]:44} {small[:22]:22} {full[:24]:24} {created_text}")
    return "\n".join(lines)


def _summary(rows: list[dict[str, Any]]) -> str:
    def names(pred: Any) -> list[str]:
        return [r["problem"] for r in rows if pred(r)]

    def small(r: dict[str, Any]) -> bool:
        return bool(r.get("small")) or any(d and not d.startswith("error") for d in r.get("small_draws") or [])

    def full_degenerate(r: dict[str, Any]) -> bool:
        return r.get("full") not in (None, "no", "not checked")

    derived = names(lambda r: r.get("sizes") is not None)
    degenerate_small = names(small)
    bad = names(lambda r: small(r) and r.get("full") == "no")
    unknown = names(lambda r: small(r) and r.get("full") in (None, "not checked"))
    full = names(full_degenerate)
    lines = [
        f"problems: {len(rows)}; small sizes derived for {len(derived)}",
        f"degenerate at the derived small sizes (under any of {len(WEIGHT_SEEDS)} weight draws): "
        f"{len(degenerate_small)} {degenerate_small}",
        f"  of which not degenerate at full size (the target is 0): {len(bad)} {bad}",
        f"  of which not checked at full size: {len(unknown)} {unknown}",
        f"degenerate at full size: {len(full)} {full}",
        f"not checked at full size: {len(names(lambda r: r.get('full') in (None, 'not checked')))}",
    ]
    if any("created_degenerate" in r for r in rows):
        missed = names(lambda r: full_degenerate(r) and not r.get("created_degenerate"))
        named = names(lambda r: str(r.get("created_degenerate") or "").startswith("degenerate task"))
        failed = names(lambda r: str(r.get("created_degenerate") or "").startswith("error"))
        lines.append(f"named degenerate by create_task: {len(named)} {named}")
        lines.append(f"degenerate at full size and not named by create_task: {len(missed)} {missed}")
        if failed:
            lines.append(f"create_task failed: {len(failed)} {failed}")
    timed = [r["derive_s"] for r in rows if r.get("derive_s") is not None]
    if timed:
        mean, most = sum(timed) / len(timed), max(timed)
        lines.append(f"size derivation: {mean:.2f} s per problem on average, {most:.1f} s at most")
    return "\n".join(lines)


async def _derive_all(paths: list[Path], threads: int) -> dict[str, Derivation]:
    found: dict[str, Derivation] = {}
    async with SizeProber(Settings(), threads=threads) as prober:
        for path in paths:
            found[_key(path)] = await prober.derive(path.read_text(), timeout_s=120)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dirs", nargs="+", type=Path, help="folders of KernelBench problems (level1, level2, ...)")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "degenerate-scan")))
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="where the full-size check runs")
    parser.add_argument("--full-budget", type=float, default=30.0, help="CPU s a full-size check may take here")
    parser.add_argument("--full-memory", type=float, default=4.0, help="GiB a full-size check may hold here")
    parser.add_argument("--problems", help="only these problem numbers, as 9,23,62")
    parser.add_argument("--no-sizes", action="store_true", help="skip the size derivation (the full-size check alone)")
    parser.add_argument("--create-task", action="store_true", help="also register each problem as create_task does")
    parser.add_argument("--threads", type=int, default=1, help="torch's CPU threads here and in the probe")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda needs a GPU")
    only = {int(p) for p in args.problems.split(",")} if args.problems else None
    paths = _problems(args.dirs, only)
    args.out.mkdir(parents=True, exist_ok=True)
    results = args.out / f"degenerate_scan-{args.device}.jsonl"
    done = {}
    if results.exists():
        for line in results.read_text().splitlines():
            row = json.loads(line)
            done[row["problem"]] = row
    todo = [p for p in paths if _key(p) not in done]
    print(f"{len(paths)} problems, {len(paths) - len(todo)} already in {results}", file=sys.stderr)
    derivations = {} if args.no_sizes or not todo else anyio.run(_derive_all, todo, args.threads)
    created = anyio.run(_created, todo, args.out / "home") if args.create_task and todo else {}
    with results.open("a") as out:
        for path in todo:
            began = time.perf_counter()
            row: dict[str, Any] = {"problem": _key(path)}
            if _key(path) in derivations:
                row |= _small(path, derivations[_key(path)], torch.device("cpu"))
            row |= _full(path, device, args.full_budget, args.full_memory * 2**30)
            row |= created.get(_key(path), {})
            row["seconds"] = round(time.perf_counter() - began, 2)
            out.write(json.dumps(row) + "\n")
            out.flush()
            done[row["problem"]] = row
            print(f"{row['problem']}: small {row.get('small')}, full {row.get('full')}", file=sys.stderr)
    rows = [done[_key(p)] for p in paths]
    print(_table(rows))
    print()
    print(_summary(rows))


if __name__ == "__main__":
    main()
