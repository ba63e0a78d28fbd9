"""The size probe: runs a task's reference at candidate small sizes, in its own process, as the judge loads it.

Reads one JSON request a line on standard input ({"source", "candidates": [{"how", "sizes"}], "budget_s"}) and
answers on the standard output it had at start: one {"attempt": ...} line per candidate tried, then
{"done": true}. What the task's code prints goes to standard error.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _out_stream() -> Any:
    fd = os.dup(1)
    os.dup2(2, 1)  # the task's prints must not reach the answers
    return os.fdopen(fd, "w", buffering=1)


def _attempt(path: Path, how: str, sizes: dict[str, int], budget_s: float) -> dict[str, Any]:
    import torch

    from adaexplore.executor.worker._taskrun import (
        TaskFault,
        build_model,
        load_task_module,
        make_args,
        tensors_in,
    )

    cpu = torch.device("cpu")
    record: dict[str, Any] = {"how": how, "sizes": sizes, "ok": False}
    start = time.perf_counter()
    try:
        module = load_task_module(str(path), sizes)
        init = make_args(module, "get_init_inputs", 42, cpu, None)
        model = build_model(module.Model, init, 42, cpu, None)
        inputs = make_args(module, "get_inputs", 42, cpu, None)
        record["build_s"] = round(time.perf_counter() - start, 4)
        start = time.process_time()  # CPU time: what the forward costs, not what other processes cost it
        with torch.no_grad():
            output = model(*inputs)
        record["forward_s"] = round(time.process_time() - start, 4)
    except TaskFault as exc:
        record["reason"] = str(exc)
        return record
    except Exception as exc:  # the task's own code failed at these sizes: the reason is the answer
        record["reason"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
        return record
    tensors = tensors_in(output)
    if not tensors or any(t.numel() == 0 for t in tensors):
        record["reason"] = "the forward returned an empty tensor (or none) at these sizes"
    elif record["forward_s"] > budget_s:
        record["reason"] = f"the forward took {record['forward_s']:.2f} s of CPU time, more than {budget_s:g} s"
    else:
        record["ok"] = True
    return record


def main() -> None:
    out = _out_stream()
    threads = os.environ.get("ADAEXPLORE_PROBE_THREADS")
    import torch

    if threads:
        torch.set_num_threads(int(threads))
    out.write(json.dumps({"ready": True}) + "\n")
    with tempfile.TemporaryDirectory(prefix="adaexplore-sizes-") as folder:
        for count, line in enumerate(sys.stdin):
            request = json.loads(line)
            path = Path(folder) / f"task_{count}.py"
            path.write_text(request["source"], encoding="utf-8")
            for candidate in request["candidates"]:
                record = _attempt(path, candidate["how"], candidate["sizes"], request["budget_s"])
                out.write(json.dumps({"attempt": record}) + "\n")
                slow = (record.get("forward_s") or 0.0) > request["budget_s"]
                if record["ok"] or slow:  # a larger candidate would be slower still
                    break
            out.write(json.dumps({"done": True}) + "\n")


if __name__ == "__main__":
    main()
