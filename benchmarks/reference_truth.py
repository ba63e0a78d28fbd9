"""What each KernelBench problem's reference computes at its full sizes, on a GPU: is its output constant, all but
zero, float32 rounding noise, or blind to its inputs? The GPU's answer is the truth that the CPU's degeneracy
checks (derived small sizes, named degenerate tasks) are held to.

    python benchmarks/reference_truth.py LEVEL_DIR... --out truth.jsonl     # on a GPU machine; resumes

For each problem: the model built under seed 42 (as KernelBench builds it), its forward in float32 on the inputs of
two seeds and in float64 on the first, on the GPU with the inputs drawn there. One row per problem: the output's
float64 scale (`ref_rms`, `ref_range`: max minus min), the float32 reference's normwise error against the float64
one (`f32_rel`), how far apart the two seeds' outputs are (`seeds_rel`), and `verdict`: `constant` (every element
the same to 1e-6 of the output's scale), `zero` (the float64 output is exactly zero), `noise` (float32 misses
float64 by more than half the output's norm), `blind` (two draws give outputs within 1e-6 of each other) or
`ok`. A problem whose reference fails or does not fit is `error` with the reason. Level 3 is left to `--ids`.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import re
import sys
import time
from pathlib import Path

import torch

# an output "does not change" where its spread is below this share of its scale
_FLAT = 1e-6


def _load(path: Path):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(f"kb_{abs(hash(path))}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tensors(out: object) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, list | tuple):
        return [t for item in out for t in _tensors(item)]
    return []


def _cast(args: list[object], dtype: torch.dtype) -> list[object]:
    return [a.to(dtype) if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]


def _forward(model: torch.nn.Module, args: list[object]) -> list[torch.Tensor]:
    with torch.no_grad():
        return [t.detach() for t in _tensors(model(*args))]


def judge(path: Path, device: torch.device) -> dict[str, object]:
    # float32 as float32: TF32 off, as strict mode's reference runs
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    module = _load(path)
    with device:
        torch.manual_seed(42)
        init = module.get_init_inputs()
        torch.manual_seed(42)
        model = module.Model(*init).to(device)
        torch.manual_seed(1)
        first = [a.to(device) if isinstance(a, torch.Tensor) else a for a in module.get_inputs()]
        torch.manual_seed(2)
        second = [a.to(device) if isinstance(a, torch.Tensor) else a for a in module.get_inputs()]
    out32 = _forward(model, first)
    out32b = _forward(model, second)
    model64 = model.double()
    out64 = _forward(model64, _cast(first, torch.float64))
    rows = []
    for a, b, r in zip(out32, out32b, out64, strict=True):
        if not r.is_floating_point():
            rows.append({"dtype": str(a.dtype), "verdict": "integer"})
            continue
        r = r.double()
        finite = torch.isfinite(r)
        rf = r[finite]
        rms = float(rf.norm() / math.sqrt(max(rf.numel(), 1))) if rf.numel() else 0.0
        spread = float(rf.max() - rf.min()) if rf.numel() else 0.0
        scale = max(rms, float(rf.abs().max()) if rf.numel() else 0.0)
        norm = float(rf.norm())
        f32_rel = (
            float((a.double()[finite] - rf).norm()) / norm
            if norm > 0
            else (0.0 if float(a.double().abs().max()) == 0 else math.inf)
        )
        seeds = float((a.double() - b.double()).norm()) / max(float(a.double().norm()), 1e-300)
        if scale == 0.0:
            verdict = "zero"
        elif rf.numel() > 1 and spread <= _FLAT * scale:
            verdict = "constant"
        elif f32_rel > 0.5:
            verdict = "noise"
        elif seeds <= _FLAT:
            verdict = "blind"
        else:
            verdict = "ok"
        rows.append(
            {
                "shape": list(a.shape),
                "dtype": str(a.dtype).removeprefix("torch."),
                "ref_rms": rms,
                "ref_range": spread,
                "f32_rel": f32_rel,
                "seeds_rel": seeds,
                "verdict": verdict,
            }
        )
    order = ["noise", "zero", "constant", "blind", "ok", "integer"]
    worst = min((r["verdict"] for r in rows), key=order.index) if rows else "error"
    return {"verdict": worst, "outputs": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("levels", nargs="+", type=Path, help="KernelBench level folders")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--ids", help="only these problem ids, e.g. 1-20,33")
    parser.add_argument("--device", default="cuda", help="where to run them (cpu: a smoke test of small problems)")
    args = parser.parse_args()
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit("the references are judged on a GPU; this machine has none")
    wanted: set[int] | None = None
    if args.ids:
        wanted = set()
        for part in args.ids.split(","):
            lo, _, hi = part.partition("-")
            wanted.update(range(int(lo), int(hi or lo) + 1))
    done = {}
    if args.out.is_file():
        for line in args.out.read_text().splitlines():
            row = json.loads(line)
            done[row["problem"]] = row
    for level in args.levels:
        problems = sorted(
            (p for p in level.glob("*.py") if re.match(r"\d+_", p.name)), key=lambda p: int(p.name.split("_")[0])
        )
        for path in problems:
            key = f"{level.name}/{path.name}"
            if key in done or (wanted is not None and int(path.name.split("_")[0]) not in wanted):
                continue
            start = time.perf_counter()
            try:
                row = {"problem": key} | judge(path, device)
            except Exception as exc:  # the reference fails or does not fit: recorded, not fatal
                row = {"problem": key, "verdict": "error", "reason": f"{type(exc).__name__}: {str(exc)[:200]}"}
            row["seconds"] = round(time.perf_counter() - start, 2)
            if device.type == "cuda":
                torch.cuda.empty_cache()
            done[key] = row
            with args.out.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(f"{key}: {row['verdict']} ({row['seconds']} s)", flush=True)
    counts: dict[str, int] = {}
    for row in done.values():
        counts[str(row["verdict"])] = counts.get(str(row["verdict"]), 0) + 1
    print("verdicts:", ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for row in done.values():
        if row["verdict"] not in ("ok", "integer"):
            print(f"  {row['problem']}: {row['verdict']} {row.get('reason', '')}")


if __name__ == "__main__":
    main()
