"""The size probe, the worker side: a worker of role `sizes` (`python -m adaexplore.executor.worker --role sizes`),
started, confined and killed like the evaluator's other workers; it runs a task's reference at candidate small
sizes on the CPU, loading the task as the judge does.

Each `ProbeSizes` request is answered with one `SizeTried` per candidate tried, smallest first, then `Done`; it
stops at the first candidate that runs and keeps the task (its output is not a constant, float32 rounding noise or
blind to its inputs, under two draws of the weights: `_degenerate.py`; a candidate whose forward takes over a fifth
of a CPU second is checked in its own dtype under one draw), or at one slower than the budget (a larger one would
be slower still), or, where every candidate so far made the task degenerate, once the request has taken five times
the budget.
Where every candidate that ran made the task degenerate, one more `SizeTried` says what the task's full sizes
gave (sizes `{}`): checked where the check's estimated cost is within `full_check_s`, else why not. The task's
module is read from the evaluator's task folder (read-only here) and runs only after the sandbox is in place.
What the task's code prints goes to standard error. The caller side is `executor/probes/_size_prober.py`.
"""

from __future__ import annotations

import time
from pathlib import Path

import torch

from adaexplore.executor.tasks._small_sizes import FULL_SIZES, Attempt, Sizes
from adaexplore.executor.wire._protocol import Done, ProbeSizes, SizeTried
from adaexplore.executor.worker.confine._faults import TaskFault
from adaexplore.executor.worker.exchange._channel import Channel
from adaexplore.executor.worker.judge._degenerate import DRAW_SEEDS, full_check_fits, reference_degeneracy
from adaexplore.executor.worker.task._taskrun import build_model, load_task_module, make_args, tensors_in

__all__ = ["serve"]

_OTHER_WEIGHTS = 1234  # the seed of a second draw of the weights a candidate is checked under
# a candidate whose forward takes longer (CPU s) is checked in its own dtype alone, under the probe's weights
# alone: float64 and a second model would cost it several times its forward, and what makes small sizes
# degenerate (groups of one channel, a reduction over one element) comes at the small, cheap ones
_FULL_CHECK_UNDER_S = 0.2
# after this much CPU time (times the forward's budget) with every candidate degenerate, larger ones are not tried:
# the task is degenerate whatever the size (a deep random network blind to its inputs, a clamp that saturates)
_DEGENERATE_FOR = 5.0


def _attempt(path: Path, how: str, sizes: Sizes, budget_s: float) -> Attempt:
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
        torch.manual_seed(DRAW_SEEDS[0])  # as the check's float64 forward of these inputs draws its dropout
        with torch.no_grad():
            output = model(*inputs)
        forward_s = record["forward_s"] = round(time.process_time() - start, 4)
        tensors = tensors_in(output)
        if not tensors or any(t.numel() == 0 for t in tensors):
            record["reason"] = "the forward returned an empty tensor (or none) at these sizes"
        elif forward_s > budget_s:
            record["reason"] = f"the forward took {forward_s:.2f} s of CPU time, more than {budget_s:g} s"
        else:
            start = time.process_time()
            drawn = (inputs, [t.detach() for t in tensors])
            where = "full" if not sizes else "small"
            precise = forward_s <= _FULL_CHECK_UNDER_S
            try:
                found = reference_degeneracy(module, cpu, where, model=model, first=drawn, precise=precise)
            except Exception:  # a model that does not run in float64: judged in its own dtype, noise unseen
                found = reference_degeneracy(module, cpu, where, model=model, first=drawn, precise=False)
            fragile = None
            if found is None and precise:  # the judge draws its own weights: sizes degenerate under others are not kept
                fragile = reference_degeneracy(module, cpu, where, init_seed=_OTHER_WEIGHTS, precise=False)
            record["check_s"] = round(time.process_time() - start, 4)
            record["degenerate"], record["fragile"] = found, fragile
            record["ok"] = found is None and fragile is None
            if found is not None:
                record["reason"] = f"the task is degenerate at these sizes: {found.what()}"
            elif fragile is not None:
                record["reason"] = f"under another draw of the weights the task is degenerate here: {fragile.what()}"
    except TaskFault as exc:
        return Attempt.model_validate(record | {"reason": str(exc)})
    except Exception as exc:  # the task's own code failed at these sizes: the reason is the answer
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return Attempt.model_validate(record | {"reason": f"{type(exc).__name__}: {first}"})
    return Attempt.model_validate(record)


def _full_sizes(path: Path, budget_s: float) -> Attempt:
    """The task checked at its own sizes where the check is expected to take at most `budget_s` CPU seconds."""
    from adaexplore.executor.worker.cost._full_size import reference_work  # triton's import only where it is needed

    record: dict[str, object] = {"how": FULL_SIZES, "sizes": {}, "ok": False}
    work, _ = reference_work(str(path), None)
    fits, why = full_check_fits(work, budget_s)
    if not fits:
        record["reason"] = f"not checked: {why}"
        return Attempt.model_validate(record)
    cpu = torch.device("cpu")
    start = time.process_time()
    try:
        found = reference_degeneracy(load_task_module(str(path), None), cpu, "full")
    except Exception as exc:  # the task's code at its full sizes (memory, say): not checked
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return Attempt.model_validate(record | {"reason": f"not checked: {type(exc).__name__}: {first}"})
    record["check_s"] = round(time.process_time() - start, 4)
    record["degenerate"] = found
    record["ok"] = found is None
    if found is not None:
        record["reason"] = f"the task is degenerate at its full sizes too: {found.what()}"
    return Attempt.model_validate(record)


def serve(channel: Channel) -> None:
    """Answer requests until the evaluator closes the channel (or sends anything else)."""
    while isinstance(command := channel.receive(), ProbeSizes):
        if command.threads is not None:
            torch.set_num_threads(command.threads)
        tried: list[Attempt] = []
        began = time.process_time()
        for candidate in command.candidates:
            attempt = _attempt(Path(command.task_path), candidate.how, candidate.sizes, command.budget_s)
            channel.send(SizeTried(attempt=attempt))
            tried.append(attempt)
            if attempt.ok or (attempt.forward_s or 0.0) > command.budget_s:
                break
            spent = time.process_time() - began
            if spent > _DEGENERATE_FOR * command.budget_s and all(a.degenerate is not None for a in tried):
                break
        last = tried[-1] if tried else None
        # every candidate that ran was degenerate, some under the probe's own weights: how are the full sizes?
        degenerate = any(a.degenerate is not None for a in tried)
        if degenerate and last is not None and not last.ok and (last.forward_s or 0.0) <= command.budget_s:
            if any(c.sizes for c in command.candidates):  # the full sizes were not among them
                channel.send(SizeTried(attempt=_full_sizes(Path(command.task_path), command.full_check_s)))
        channel.send(Done())
