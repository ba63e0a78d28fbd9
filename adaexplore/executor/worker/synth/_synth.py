"""Task synthesis, the worker side: a worker of role `synth` (`python -m adaexplore.executor.worker --role synth`),
started and killed like every other worker of the evaluator; this process imports torch.

It answers one `Synthesize` request with one `Synthesized` reply (anything torch prints goes to stderr).
Requests:

    {"command": "synthesize", "count": N, "seed": S, "max_tries": T}  -> a SynthesisReport
    {"command": "check", "sources": ["..."], "narrow": [names] | null} -> {"checks": [TaskCheck, ...]}
    {"command": "catalogue"}                                          -> a Catalogue

A request it cannot read is answered with the reason in `Synthesized.error`. The caller side, its models and
its timeout are in `adaexplore.executor.probes._synth`.

The catalogue of operators is in `_synth_catalogue`, the shape families, the composition of a task and its text
in `_synth_compose`, and the checks of a source in `_synth_checks`.
"""

from __future__ import annotations

import json
import random
from typing import Any

import torch

from adaexplore.executor.worker.exchange._channel import Channel
from adaexplore.executor.worker.synth._synth_catalogue import build_catalogue
from adaexplore.executor.worker.synth._synth_checks import check_source
from adaexplore.executor.worker.synth._synth_compose import FAMILIES, compose, render


class BadRequest(Exception):
    """The request is not one this worker answers."""


def synthesize(count: int, seed: int, max_tries: int) -> dict[str, Any]:
    catalogue = build_catalogue()
    families = [f for f in FAMILIES if f.anchor is None or f.anchor in catalogue.operators]
    rng = random.Random(seed)
    tasks: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
    seen: dict[tuple[str, ...], str] = {}
    tries = 0
    while len(tasks) < count and tries < max_tries and families:
        tries += 1
        family = rng.choice(families)
        draft, operators, why = compose(family, catalogue, rng)
        if draft is None:
            rejected.append({"operators": operators, "reason": why})
            continue
        key = (family.name, *operators)
        if key in seen:
            rejected.append({"operators": operators, "reason": f"duplicate of an earlier draft ({seen[key]})"})
            continue
        name = f"syn_{len(tasks):04d}_{'_'.join(op.split('.', 1)[1].lower() for op in operators)}"[:96]
        seen[key] = name
        source = render(draft)
        verdict = check_source(source, list(family.narrow), name)
        if not verdict["ok"]:
            rejected.append({"operators": operators, "reason": verdict["reason"]})
            continue
        tasks.append({"name": name, "source": source, "operators": operators, "seed_task": family.name})
    return {
        "tasks": tasks,
        "rejected": rejected,
        "catalogue_size": len(catalogue.operators),
        "torch_version": torch.__version__,
    }


def catalogue_reply() -> dict[str, Any]:
    catalogue = build_catalogue()
    return {
        "torch_version": torch.__version__,
        "operators": [
            {"name": op.name, "ranks": sorted(op.ranks), "changes_shape": "spatial" in op.ranks.values()}
            for _, op in sorted(catalogue.operators.items())
        ],
        "anchors": {f.name: f.anchor for f in FAMILIES if f.anchor is not None},
        "excluded": dict(sorted(catalogue.excluded.items())),
    }


def _integer(request: dict[str, Any], key: str, minimum: int) -> int:
    value = request.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise BadRequest(f"{key!r} must be an integer of at least {minimum}, not {value!r}")
    return value


def answer(request: Any) -> dict[str, Any]:
    if not isinstance(request, dict):
        raise BadRequest("the request must be a JSON object")
    command = request.get("command")
    if command == "synthesize":
        count = _integer(request, "count", 0)
        return synthesize(count, _integer(request, "seed", -(2**63)), _integer(request, "max_tries", 0))
    if command == "check":
        sources, narrow = request.get("sources"), request.get("narrow")
        if not (isinstance(sources, list) and all(isinstance(source, str) for source in sources)):
            raise BadRequest("'sources' must be a list of task module texts")
        if narrow is not None and not (isinstance(narrow, list) and all(isinstance(n, str) for n in narrow)):
            raise BadRequest("'narrow' must be a list of size names or null")
        return {"checks": [check_source(source, narrow, f"task_{i}") for i, source in enumerate(sources)]}
    if command == "catalogue":
        return catalogue_reply()
    raise BadRequest(f"unknown command {command!r}; expected 'synthesize', 'check' or 'catalogue'")


def serve(channel: Channel) -> None:
    """Answer the one request the evaluator sends, then return (the process ends)."""
    from adaexplore.executor.wire._protocol import Synthesize, Synthesized

    torch.set_num_threads(1)
    command = channel.receive()
    if not isinstance(command, Synthesize):
        return
    try:
        reply = answer(command.request)
    except BadRequest as exc:
        channel.send(Synthesized(error=str(exc)))
        return
    # the reply crosses as JSON: a non-finite number in it is our bug, not something to send as NaN
    json.dumps(reply, allow_nan=False)
    channel.send(Synthesized(reply=reply))
