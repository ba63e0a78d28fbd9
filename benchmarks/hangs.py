"""How long a kernel that never returns takes to end, and a first Ctrl-C to stop a search whose step hangs.

    python3 benchmarks/hangs.py [--runs 3] [--out DIR] [--config FILE] [--label NAME] [--cases CASE,...]

- `profile-python`: `adaexplore profile` of a kernel whose forward loops forever in Python;
- `profile-triton`: the same for a Triton kernel that spins on a load (on the CPU, in the interpreter);
- `explore-ctrl-c`: `adaexplore explore` on a task whose only kernel hangs (replay serves it from a folder beside
  the task), SIGINT one second after its step starts; the time from the signal to the exit.

Each run is a fresh process (its evaluator's start included in the profile times, which are wall times of the
whole command). Results go to OUT/hangs.jsonl as they come, so a run stopped midway resumes; the table comes last.
Needs only the repository (examples/tasks/row_softmax.py). On a GPU, profile has no budget (each phase keeps its
own timeout): give --config with shorter `trial_timeout_s` and `load_timeout_s` to keep it within minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASK = ROOT / "examples" / "tasks" / "row_softmax.py"

PYTHON_HANG = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.softmax(x, dim=-1)
        res = torch.empty_like(out)
        while out.numel() > 0:
            pass
        _copy[(triton.cdiv(out.numel(), 1024),)](out, res, out.numel(), BLOCK=1024)
        return res
"""

TRITON_HANG = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    while tl.load(x_ptr, volatile=True) < 1e30:
        pass
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.softmax(x, dim=-1)
        res = torch.empty_like(out)
        _copy[(triton.cdiv(out.numel(), 1024),)](out, res, out.numel(), BLOCK=1024)
        return res
"""


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ADAEXPLORE_DB")}
    env["ADAEXPLORE_HOME"] = str(home)
    return env


def _command(config: Path | None, *args: str) -> list[str]:
    return [sys.executable, "-m", "adaexplore", *(["--config", str(config)] if config else []), *args]


def profile(kernel: str, work: Path, config: Path | None) -> dict[str, object]:
    path = work / "kernel.py"
    path.write_text(kernel)
    started = time.monotonic()
    done = subprocess.run(
        _command(config, "profile", str(TASK), str(path), "--json", str(work / "result.json")),
        cwd=ROOT,
        env=_env(work / "home"),
        capture_output=True,
        text=True,
        timeout=900,
    )
    seconds = time.monotonic() - started
    result = json.loads((work / "result.json").read_text()) if (work / "result.json").exists() else {}
    return {
        "seconds": round(seconds, 2),
        "exit": done.returncode,
        "status": result.get("status"),
        "message": result.get("message") or done.stderr[-400:],
        "phases": result.get("phases"),
    }


def _in_flight(db: Path) -> bool:
    if not db.exists():
        return False
    try:
        with sqlite3.connect(db, timeout=1) as connection:
            return connection.execute("SELECT count(*) FROM claims").fetchone()[0] > 0
    except sqlite3.Error:
        return False


def explore_ctrl_c(work: Path, config: Path | None) -> dict[str, object]:
    # the layout replay reads beside a task (tasks/X.py, kernels/X/*.py), which every version reads
    (work / "own" / "tasks").mkdir(parents=True)
    (work / "own" / "kernels" / TASK.stem).mkdir(parents=True)
    task = work / "own" / "tasks" / TASK.name
    task.write_text(TASK.read_text())
    (work / "own" / "kernels" / TASK.stem / "spins.py").write_text(TRITON_HANG)
    process = subprocess.Popen(
        _command(config, "explore", str(task), "--steps", "2", "--seed", "1"),
        cwd=ROOT,
        env=_env(work / "home"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 600
    while not _in_flight(work / "home" / "adaexplore.db") and process.poll() is None:
        if time.monotonic() > deadline:
            process.kill()
            return {"seconds": None, "exit": None, "status": "the step never started", "message": ""}
        time.sleep(0.2)
    time.sleep(1.0)  # the kernel is in its loop
    sent = time.monotonic()
    process.send_signal(signal.SIGINT)
    try:
        out, err = process.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
    seconds = time.monotonic() - sent
    resume = next((line for line in out.splitlines() if "Resume with:" in line), "")
    return {
        "seconds": round(seconds, 2),
        "exit": process.returncode,
        "status": "summary printed" if "stopped" in out else "no summary",
        "message": resume or err[-400:],
    }


CASES = {
    "profile-python": lambda work, config: profile(PYTHON_HANG, work, config),
    "profile-triton": lambda work, config: profile(TRITON_HANG, work, config),
    "explore-ctrl-c": explore_ctrl_c,
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", tempfile.gettempdir())))
    parser.add_argument("--config", type=Path, help="a settings file for every command (shorter timeouts)")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--label", default="", help="a name for these results (a version, a machine)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    log = args.out / "hangs.jsonl"
    rows = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    cases = [c for c in args.cases.split(",") if c]
    for case in cases:
        done = [r for r in rows if r["case"] == case and r["label"] == args.label]
        for _ in range(args.runs - len(done)):
            with tempfile.TemporaryDirectory() as work:
                row = {"case": case, "label": args.label, **CASES[case](Path(work), args.config)}
            rows.append(row)
            with log.open("a") as file:
                file.write(json.dumps(row) + "\n")
            print(f"{case}: {row['seconds']} s, exit {row['exit']}, {row['status']}: {str(row['message'])[:300]}")
    print(f"\n{'case':<16} {'label':<10} {'runs':>4} {'median s':>9} {'min s':>7} {'max s':>7}  exits")
    for case in cases:
        mine = [r for r in rows if r["case"] == case and r["label"] == args.label]
        times = [float(r["seconds"]) for r in mine if r["seconds"] is not None]
        if not times:
            continue
        exits = ",".join(str(r["exit"]) for r in mine)
        print(
            f"{case:<16} {args.label:<10} {len(mine):>4} {statistics.median(times):>9.1f} {min(times):>7.1f} "
            f"{max(times):>7.1f}  {exits}"
        )


if __name__ == "__main__":
    main()
