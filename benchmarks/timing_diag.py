"""One process times a task's reference four ways, a few rounds over: the evaluator's strict Timer (and
the same with one set of inputs reused, as do_bench does); one synchronized call at a time from an
idle queue (CUDA events; the host's launch latency shows); calls queued behind a sleep kernel (the
latency hidden); and `triton.testing.do_bench`. Run it in several processes to tell a spread between
processes from a spread between measurements. Prints one JSON line.

    python benchmarks/timing_diag.py TASK [KERNEL] [--rounds 3] [--tracker]

With KERNEL, its ModelNew is timed the same ways; `--tracker` first installs the launch audit that a
candidate's worker runs under.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

import torch
import triton

from adaexplore.config import ExecutorConfig
from adaexplore.domain import Backend, Mode
from adaexplore.executor.wire._modes import mode_spec
from adaexplore.executor.worker.candidate._launches import LaunchTracker
from adaexplore.executor.worker.confine._faults import CANDIDATE_MODULE
from adaexplore.executor.worker.confine._importing import import_file
from adaexplore.executor.worker.timing._timing import Timer


def busy_device_ms(call: Any, reps: int = 100) -> float:
    """Device time of calls enqueued behind a 0.2 ms sleep kernel, so host launch latency is hidden."""
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    times = []
    for _ in range(reps):
        flush.zero_()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(400_000)
        start.record()
        call()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("task", type=Path)
    parser.add_argument("kernel", type=Path, nargs="?")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tracker", action="store_true")
    args = parser.parse_args()
    if args.tracker:
        tracker = LaunchTracker(Backend.cuda)
        tracker.install()
    task = import_file("task", args.task)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device("cuda")
    torch.manual_seed(1)
    models = {"reference": task.Model(*task.get_init_inputs()).to(device)}
    if args.kernel is not None:
        torch.manual_seed(1)
        models["candidate"] = import_file(CANDIDATE_MODULE, args.kernel).ModelNew(*task.get_init_inputs()).to(device)
    torch.manual_seed(2)
    base = [x.to(device) if isinstance(x, torch.Tensor) else x for x in task.get_inputs()]
    timing = mode_spec(Mode.strict).timing
    cfg = ExecutorConfig()
    rounds: list[dict[str, Any]] = []
    with torch.no_grad():
        for name, model in [(n, m) for _ in range(args.rounds) for n, m in models.items()]:
            timer = Timer(device)
            measured = timer.measure(
                lambda a, m=model: m(*a),
                base,
                timing,
                budget_ms=cfg.timing_budget_ms,
                min_reps=cfg.min_reps,
                max_reps=cfg.max_reps,
            )
            same = timer.measure(
                lambda a, m=model: m(*a),
                base,
                timing.model_copy(update={"fresh_inputs": False}),
                budget_ms=cfg.timing_budget_ms,
                min_reps=cfg.min_reps,
                max_reps=cfg.max_reps,
            )
            alone = [timer._one(lambda a, m=model: m(*a), base, timing)[0] for _ in range(100)]
            rounds.append(
                {
                    "model": name,
                    "strict_ms": statistics.median(measured.times_ms),
                    "n": len(measured.times_ms),
                    "host_bound": measured.host_bound,
                    "unseen_ms": measured.unseen_ms,
                    "same_inputs_ms": statistics.median(same.times_ms),
                    "alone_ms": statistics.median(alone),
                    "busy_device_ms": busy_device_ms(lambda m=model: m(*base)),
                    "do_bench_ms": triton.testing.do_bench(
                        lambda m=model: m(*base), warmup=50, rep=500, return_mode="median"
                    ),
                }
            )
    print(json.dumps({"rounds": rounds}))


if __name__ == "__main__":
    main()
