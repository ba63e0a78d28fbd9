"""The size probe, the worker side: a worker of role `sizes` (`python -m adaexplore.executor.worker --role sizes`),
started, confined and killed like the evaluator's other workers; it runs a task's reference at candidate small
sizes on the CPU, loading the task as the judge does.

Each `ProbeSizes` request is answered with one `SizeTried` per candidate tried, smallest first, then `Done`; it
stops at the first candidate that runs, or at one slower than the budget (a larger one would be slower still).
The task's module is read from the evaluator's task folder (read-only here) and runs only after the sandbox is
in place. What the task's code prints goes to standard error. The caller side is `executor/probes/_size_prober.py`.
"""

from __future__ import annotations

import time
from pathlib import Path

import torch

from adaexplore.executor.tasks._small_sizes import Attempt
from adaexplore.executor.wire._protocol import Done, ProbeSizes, SizeTried
from adaexplore.executor.worker._channel import Channel
from adaexplore.executor.worker._faults import TaskFault
from adaexplore.executor.worker._taskrun import build_model, load_task_module, make_args, tensors_in

__all__ = ["serve"]


def _attempt(path: Path, how: str, sizes: dict[str, int], budget_s: float) -> Attempt:
    cpu = torch.device("cpu")
    record: dict[str, object] = {"how": how, "sizes": sizes, "ok": False}
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
        forward_s = record["forward_s"] = round(time.process_time() - start, 4)
    except TaskFault as exc:
        return Attempt.model_validate(record | {"reason": str(exc)})
    except Exception as exc:  # the task's own code failed at these sizes: the reason is the answer
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return Attempt.model_validate(record | {"reason": f"{type(exc).__name__}: {first}"})
    tensors = tensors_in(output)
    if not tensors or any(t.numel() == 0 for t in tensors):
        record["reason"] = "the forward returned an empty tensor (or none) at these sizes"
    elif forward_s > budget_s:
        record["reason"] = f"the forward took {forward_s:.2f} s of CPU time, more than {budget_s:g} s"
    else:
        record["ok"] = True
    return Attempt.model_validate(record)


def serve(channel: Channel) -> None:
    """Answer requests until the evaluator closes the channel (or sends anything else)."""
    while isinstance(command := channel.receive(), ProbeSizes):
        if command.threads is not None:
            torch.set_num_threads(command.threads)
        for candidate in command.candidates:
            attempt = _attempt(Path(command.task_path), candidate.how, candidate.sizes, command.budget_s)
            channel.send(SizeTried(attempt=attempt))
            if attempt.ok or (attempt.forward_s or 0.0) > command.budget_s:
                break
        channel.send(Done())
