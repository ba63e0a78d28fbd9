"""The judge's references, kept between evaluations in a cache bounded in bytes.

A reference is what one task, at one size, under one set of seeds and numerics, needs to judge a candidate:
the task's module, the reference models, the inputs of every trial and of timing, and the reference's
outputs. A search evaluates many candidates of one task, so its reference is built once. Many tasks in one
evaluator would fill the device: the cache evicts the least recently used references that no evaluation is
using, to stay within its budget, and refuses a task whose reference alone is larger than the budget.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal

import torch

from adaexplore.domain import AuditFlag, Degeneracy, Tolerance
from adaexplore.executor.wire._protocol import JobSpec
from adaexplore.executor.worker.confine._faults import TaskFault
from adaexplore.executor.worker.task._taskrun import tensors_in

__all__ = ["Reference", "ReferenceCache", "reference_key"]


@dataclass
class Reference:
    module: ModuleType
    cast: torch.dtype | None
    native: torch.nn.Module
    reference: torch.nn.Module
    float64: bool
    init_seed: int
    trial_seeds: list[int]
    timing_seed: int
    inputs: list[list[Any]] = field(default_factory=list)
    refs: list[list[torch.Tensor]] = field(default_factory=list)
    tolerances: list[Tolerance] = field(default_factory=list)
    allowance: list[float] = field(default_factory=list)
    dtypes: list[torch.dtype] = field(default_factory=list)
    flags: list[AuditFlag] = field(default_factory=list)
    mutates_inputs: bool = False
    aliases_inputs: bool = False
    # the task is degenerate (at full size where it was checked there, else at these sizes: `_degenerate.py`)
    degeneracy: Degeneracy | None = None
    # these small sizes make the task degenerate, though its full sizes do not
    small_degeneracy: Degeneracy | None = None
    degeneracy_checked: Literal["full", "small"] | None = "small"  # where that was decided (None: not)
    timing_base: list[Any] | None = None
    # inputs drawn ahead with the trials' (per seed, each copy taken once; `ReferenceBuilder.inputs`)
    drawn: dict[int, list[list[Any]]] = field(default_factory=dict)
    # the pool of the timed calls' factors, with its key (worker/timing/_perturb.py)
    pattern_pool: tuple[int, torch.Tensor] | None = None
    # kept after its evaluation ends (fixed seeds: the next evaluation of the task uses it again)
    keep: bool = True
    users: int = 0

    @property
    def prepared(self) -> bool:
        return bool(self.refs)

    def tensors(self) -> list[torch.Tensor]:
        held: list[torch.Tensor] = []
        for model in (self.native, self.reference):
            held += [t.detach() for t in model.parameters()] + list(model.buffers())
        for args in self.inputs:
            held += tensors_in(args)
        for outs in self.refs:
            held += outs
        if self.timing_base is not None:
            held += tensors_in(self.timing_base)
        for copies in self.drawn.values():
            for args in copies:
                held += tensors_in(args)
        if self.pattern_pool is not None:
            held.append(self.pattern_pool[1])
        return held

    def nbytes(self) -> int:
        """The bytes its tensors hold, each storage once."""
        seen: dict[tuple[str, int], int] = {}
        for t in self.tensors():
            storage = t.untyped_storage()
            seen[(str(t.device), storage.data_ptr())] = storage.nbytes()
        return sum(seen.values())


def reference_key(spec: JobSpec) -> str:
    """What makes two jobs' references the same: the task's file, its sizes, the seeds and the numerics."""
    return json.dumps(
        [
            spec.task_path,
            spec.sizes,
            spec.small_sizes,
            spec.mode.value,
            spec.init_seed,
            spec.trial_seeds,
            spec.timing_seed,
            spec.trials,
            spec.cast_floats_to,
            spec.allow_tf32_matmul,
            spec.allow_tf32_cudnn,
            spec.allowed_precision,
            spec.generate_on_device,
        ],
        sort_keys=True,
    )


class ReferenceCache:
    """References by key, least recently used first, within `budget` bytes (besides those in use)."""

    def __init__(self, budget: int, device: torch.device) -> None:
        self.budget = budget
        self.device = device
        self._entries: OrderedDict[str, Reference] = OrderedDict()
        self._sizes: dict[str, int] = {}
        # the bytes of other memory the judge holds for evaluations in progress (shared buffers)
        self.extra = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> Reference | None:
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
        return entry

    def add(self, key: str, entry: Reference) -> None:
        self._entries[key] = entry
        self._entries.move_to_end(key)

    def held(self) -> int:
        return sum(self._sizes.get(k, 0) for k in self._entries) + self.extra

    def idle(self) -> int:
        """The bytes of the references no job uses (kept for a later job, or built ahead)."""
        return sum(self._sizes.get(k) or e.nbytes() for k, e in self._entries.items() if e.users == 0)

    def measure(self, key: str, entry: Reference, task: str) -> int:
        """Record the entry's size now that it is built, make room for it, and return the size.

        Raises:
            TaskFault: the reference alone needs more than the budget.
        """
        size = entry.nbytes()
        self._sizes[key] = size
        # the reference alone: the buffers the judge shares with evaluations in progress (this one's and others',
        # which run beside it) are no fault of this task's
        if size > self.budget:
            self.drop(key)
            raise TaskFault(
                f"the task needs {_gib(size)} of {self._where()} memory for its reference (its weights, the inputs "
                f"of every trial and of timing, and the reference's outputs); the judge may hold "
                f"{_gib(self.budget)} (executor.judge_memory_share or judge_memory_bytes). Use smaller sizes "
                f"or fewer trials for {task}, or raise the budget"
            )
        self.make_room(0)
        return size

    def make_room(self, need: int) -> None:
        """Evict unused references, oldest first, until `need` more bytes fit in the budget."""
        for key in list(self._entries):
            if self.held() + need <= self.budget:
                break
            if self._entries[key].users == 0:
                self.drop(key)

    def evict_all(self) -> None:
        for key in [k for k, e in self._entries.items() if e.users == 0]:
            self.drop(key)

    def drop(self, key: str) -> None:
        self._entries.pop(key, None)
        self._sizes.pop(key, None)
        if self.device.type == "cuda":
            torch.cuda.empty_cache()

    def _where(self) -> str:
        return "GPU" if self.device.type == "cuda" else "host"


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB"
