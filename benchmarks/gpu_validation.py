"""The whole test suite on a GPU machine lent in calls of a few minutes: the trust set first, then the rest, each
call going on where the last one stopped, with one summary file that says what has run so far.

The first call collects every test once and orders them: the trust set (`TRUST`, the files whose verdicts say the
most about whether a result can be believed, most telling first), then every other test file in path order. Each
call then runs, in batches of a few files (`pytest -n WORKERS --dist loadscope -v`), the tests that have no result
yet, until its time budget is spent; a batch cut short by the budget keeps the results its log shows, and its other
tests run in the next call. The state lives in `--state` (kept on the machine between calls); the summary is
written to `--state` and to `--out` after every batch, so a lease cut short still says the most it can.

    python3 benchmarks/gpu_validation.py --out "$OUT"                   # one call: at most --budget-s seconds
    python3 benchmarks/gpu_validation.py --out "$OUT" --restart         # forget earlier results, collect again
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# most telling first: the sandbox holds, every known hack is caught, whose fault a failure is, the worker's own
# checks, nothing outlives its worker, the evaluator end to end, then the timing a verdict quotes
TRUST = (
    "tests/sandbox",
    "tests/adversarial/test_adversarial.py",
    "tests/executor/test_no_stray_sandbox.py",
    "tests/adversarial",
    "tests/executor/test_faults.py",
    "tests/executor/worker/test_worker_checks.py",
    "tests/executor/worker/test_fast_math.py",
    "tests/executor/worker/test_patches.py",
    "tests/executor/worker/test_guard.py",
    "tests/executor/test_sandbox_plan.py",
    "tests/executor/test_evaluator.py",
    "tests/test_examples.py",
    "tests/executor/worker/test_timing.py",
    "tests/executor/test_device_lock.py",
    "tests/executor/test_gpu_truth.py",
)
_OUTCOMES = "PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS"
# `[gw0] [ 10%] PASSED tests/x.py::test_y` under xdist; `FAILED tests/x.py::test_y - why` in the summary
_AFTER = re.compile(rf"\b({_OUTCOMES}) (\S.*::.+?)(?: - .*)?\s*$")
# `tests/x.py::test_y PASSED [ 10%]` without it
_BEFORE = re.compile(rf"^(\S.*::.+?) ({_OUTCOMES})(?: +\[ *\d+%\])?\s*$")


def _rank(path: str, trust: tuple[str, ...]) -> tuple[int, str]:
    """Where a test file goes: the first trust entry that covers it, else after all of them, in path order."""
    for index, entry in enumerate(trust):
        if path == entry or path.startswith(entry.rstrip("/") + "/"):
            return index, path
    return len(trust), path


def collect(tests: str, root: Path, trust: tuple[str, ...]) -> list[str]:
    """Every test id under `tests`, in the order they are to run."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", tests],
        cwd=root,
        capture_output=True,
        text=True,
    )
    ids = [line.strip() for line in done.stdout.splitlines() if "::" in line and not line.startswith(" ")]
    if not ids:
        raise SystemExit(f"collected no tests under {tests}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    order = {path: _rank(path, trust) for path in {i.split("::")[0] for i in ids}}
    return sorted(ids, key=lambda i: order[i.split("::")[0]])


def parse(log: str) -> dict[str, str]:
    """The result of each test a pytest -v log names (xdist's and plain lines alike)."""
    found: dict[str, str] = {}
    for line in log.splitlines():
        before = _BEFORE.match(line.strip())
        if before:
            found[before[1]] = before[2]
            continue
        after = _AFTER.search(line)
        if after:
            found[after[2]] = after[1]
    return found


class State:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / "state.json"
        data = json.loads(self.path.read_text()) if self.path.exists() else {}
        self.order: list[str] = data.get("order", [])
        self.results: dict[str, str] = data.get("results", {})
        self.calls: list[dict] = data.get("calls", [])
        self.parts_s: dict[str, float] = data.get("parts_s", {"trust": 0.0, "rest": 0.0})

    def save(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        data = {"order": self.order, "results": self.results, "calls": self.calls, "parts_s": self.parts_s}
        self.path.write_text(json.dumps(data))

    def pending(self) -> list[str]:
        return [i for i in self.order if i not in self.results]


def _part(test: str, trust: tuple[str, ...]) -> str:
    return "trust" if _rank(test.split("::")[0], trust)[0] < len(trust) else "rest"


def summary(state: State, trust: tuple[str, ...], machine: str) -> str:
    lines = [f"# The test suite on {machine}", ""]
    for part in ("trust", "rest"):
        ids = [i for i in state.order if _part(i, trust) == part]
        counts: dict[str, int] = {}
        for test in ids:
            outcome = state.results.get(test, "not run yet")
            counts[outcome] = counts.get(outcome, 0) + 1
        told = ", ".join(f"{n} {k.lower()}" for k, n in sorted(counts.items(), key=lambda kv: kv[0].lower()))
        lines.append(f"- {part}: {len(ids)} tests: {told}; {state.parts_s.get(part, 0.0):.0f} s of runs")
    bad = [t for t in state.order if state.results.get(t) in ("FAILED", "ERROR")]
    lines += ["", f"## Failures ({len(bad)})", *[f"- {t}: {state.results[t]}" for t in bad]]
    lines += ["", "## Calls", *[f"- {c['date']}: {c['ran']} results in {c['seconds']:.0f} s" for c in state.calls]]
    left = len(state.pending())
    lines += ["", "complete" if not left else f"{left} tests not run yet: call again to go on"]
    return "\n".join(lines) + "\n"


def _machine() -> str:
    try:
        gpu = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        gpu = ""
    named = {"Python": sys.version.split()[0]}
    for package in ("torch", "triton"):
        try:
            named[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            named[package] = "absent"
    return f"{gpu or 'no GPU'} ({', '.join(f'{k} {v}' for k, v in named.items())})"


def main(args: argparse.Namespace) -> int:
    started = time.monotonic()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    state_dir = Path(args.state)
    if args.restart and (state_dir / "state.json").exists():
        (state_dir / "state.json").unlink()
    state = State(state_dir)
    root = Path(args.root)
    trust = tuple(args.trust) if args.trust else TRUST
    if not state.order:
        state.order = collect(args.tests, root, trust)
        state.save()
    machine = _machine()
    call: dict[str, Any] = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "ran": 0, "seconds": 0.0}
    state.calls.append(call)
    batch_number = 0
    while state.pending():
        left = args.budget_s - (time.monotonic() - started)
        if left < args.min_batch_s or (args.max_batches and batch_number >= args.max_batches):
            break
        pending = state.pending()
        files: list[str] = []
        for test in pending:
            path = test.split("::")[0]
            if path not in files:
                if len(files) == args.files_per_batch:
                    break
                files.append(path)
        batch = [t for t in pending if t.split("::")[0] in files]
        batch_number += 1
        argfile = state_dir / f"batch{batch_number}.args"
        argfile.write_text("\n".join(batch) + "\n")
        workers = ["-n", str(args.workers), "--dist", "loadscope"] if args.workers > 0 else ["-p", "no:xdist"]
        command = ["timeout", "-s", "INT", "-k", "20", str(int(left)), sys.executable, "-m", "pytest", "-v"]
        command += ["-p", "no:cacheprovider", "-rfE", *workers, f"@{argfile}"]
        t0 = time.monotonic()
        done = subprocess.run(
            command, cwd=root, capture_output=True, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
        )
        seconds = time.monotonic() - t0
        log = done.stdout + done.stderr
        with (out / "pytest-validation.log").open("a") as f:
            f.write(f"\n===== batch {batch_number}: {', '.join(files)} (rc {done.returncode}, {seconds:.0f} s)\n{log}")
        found = {t: r for t, r in parse(log).items() if t in set(batch)}
        if not found and done.returncode not in (124, 130):
            # nothing ran and the time was not the cause: the batch itself is broken (an import error, say)
            found = {t: "ERROR" for t in batch}
        state.results.update(found)
        call["ran"] += len(found)
        call["seconds"] = time.monotonic() - started
        parts = {_part(t, trust) for t in batch}
        for part in parts:
            state.parts_s[part] = state.parts_s.get(part, 0.0) + seconds / len(parts)
        state.save()
        text = summary(state, trust, machine)
        (state_dir / "summary.md").write_text(text)
        (out / "validation-summary.md").write_text(text)
        if done.returncode in (124, 130):
            break  # the budget ended inside the batch
    call["seconds"] = time.monotonic() - started
    state.save()
    text = summary(state, trust, machine)
    (state_dir / "summary.md").write_text(text)
    (out / "validation-summary.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "gpu-results"))
    parser.add_argument("--state", default=str(ROOT / "test-artifacts" / "gpu-validation"))
    parser.add_argument("--root", default=str(ROOT), help="where pytest runs (the repository)")
    parser.add_argument("--tests", default="tests", help="the folder (or file) to collect, under --root")
    parser.add_argument("--trust", nargs="*", default=None, help="the trust set's paths, most telling first")
    parser.add_argument("--budget-s", type=float, default=540.0, help="this call's time, collection included")
    parser.add_argument("--min-batch-s", type=float, default=45.0, help="start no batch with less time than this")
    parser.add_argument("--files-per-batch", type=int, default=6)
    parser.add_argument("--max-batches", type=int, default=0, help="stop after this many batches (0: no limit)")
    parser.add_argument("--workers", type=int, default=int(os.environ.get("WORKERS", "8")))
    parser.add_argument("--restart", action="store_true")
    sys.exit(main(parser.parse_args()))
