"""Practice tasks for `adaexplore adapt`, synthesized from the installed torch's operator catalogue.

This is the caller's side and it never imports torch (DESIGN §2): the work runs in a worker of role `synth`
(`adaexplore.executor.worker.synth._synth`), started, confined and killed like the evaluator's other workers, which
introspects `torch.nn` and `torch.nn.functional`,
keeps the operators that pass a probe, combines 3 to 6 of them in one of three shape families taken from
`examples/tasks` (gemm_epilogue, conv2d_activation, row_softmax), and keeps the tasks that are
deterministic, depend on their input, and have outputs well above KernelBench's tolerance. The worker's
docstring describes the catalogue, the composition and every check with its threshold.

The request and the reply are the protocol's `Synthesize` and `Synthesized`. Past the timeout the worker's
whole process group is killed. A worker that fails or says something unreadable is an `EvaluatorError` with the
tail of what it wrote.

Same seed and same torch give byte-identical tasks; nothing is cached on disk.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, TypeVar

import anyio
from pydantic import BaseModel, ConfigDict, ValidationError

from adaexplore.config import Settings
from adaexplore.errors import EvaluatorError, RequestError
from adaexplore.executor.host import _workspace as workspace
from adaexplore.executor.host._process import WorkerDied, WorkerTimeout
from adaexplore.executor.host._sandbox import detect_sandbox
from adaexplore.executor.host._spawn import ProcessSpawner, SpawnRequest, WorkerChannel
from adaexplore.executor.wire._protocol import Synthesize, Synthesized

__all__ = [
    "Catalogue",
    "CatalogueOperator",
    "Rejection",
    "SynthesisReport",
    "SyntheticTask",
    "TaskCheck",
    "check_task_sources",
    "operator_catalogue",
    "run_worker",
    "synthesize_tasks",
]

TRIES_PER_TASK = 20
_STDERR_TAIL = 4000
_M = TypeVar("_M", bound=BaseModel)


class SyntheticTask(BaseModel):
    """A synthesized task module in the KernelBench format (with `SMALL_SIZES`)."""

    model_config = ConfigDict(extra="forbid")

    name: str  # "syn_0003_linear_gelu_layernorm": stable for a seed, safe as a file name
    source: str
    operators: list[str]  # ["nn.Linear", "F.gelu", "nn.LayerNorm"]
    seed_task: str  # the example task whose shape family it follows, e.g. "gemm_epilogue"


class Rejection(BaseModel):
    """A drafted task that was not kept, and why."""

    model_config = ConfigDict(extra="forbid")

    operators: list[str]
    reason: str  # "not deterministic (…)", "output does not depend on the input (…)", "raised …", …


class SynthesisReport(BaseModel):
    """What `synthesize_tasks` made: the tasks kept (maybe fewer than asked) and the drafts rejected."""

    model_config = ConfigDict(extra="forbid")

    tasks: list[SyntheticTask]
    rejected: list[Rejection]
    catalogue_size: int  # operators usable in the installed torch
    torch_version: str


class TaskCheck(BaseModel):
    """The synthesis checks' verdict on one task source, with what they measured (at small sizes)."""

    model_config = ConfigDict(extra="forbid")

    ok: bool
    reason: str | None = None
    output_shape: list[int] | None = None
    gpu_output_shape: list[int] | None = None
    rms: float | None = None
    near_zero_fraction: float | None = None
    relative_change: float | None = None  # between the outputs for two random inputs
    wide_rms: float | None = None  # at GPU widths (batch and image sizes kept small), when measured


class _Checks(BaseModel):
    model_config = ConfigDict(extra="forbid")

    checks: list[TaskCheck]


class CatalogueOperator(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str  # "nn.GELU", "F.gelu"
    ranks: list[int]  # input ranks it is usable at: 2 = (batch, features), 4 = (N, C, H, W)
    changes_shape: bool  # changes height and width of a 4-D input (pools, pads, unpadded convolutions)


class Catalogue(BaseModel):
    """The operators of the installed torch that passed the probe, and why the others did not."""

    model_config = ConfigDict(extra="forbid")

    torch_version: str
    operators: list[CatalogueOperator]
    anchors: dict[str, str]  # family (example task) -> the operator its tasks start with
    excluded: dict[str, str]  # operator -> reason

    def names(self) -> set[str]:
        return {op.name for op in self.operators}


async def synthesize_tasks(
    count: int, *, seed: int, timeout_s: float = 300.0, settings: Settings | None = None
) -> SynthesisReport:
    """Synthesize up to `count` checked practice tasks, deterministically for `seed` and the installed torch.

    At most `20 * count` drafts are tried; when fewer than `count` pass, the report holds what passed and
    its rejections say why the others failed.

    Raises:
        RequestError: `count` is negative.
        EvaluatorError: the worker failed, timed out, or replied with something unreadable.
    """
    if count < 0:
        raise RequestError(f"cannot synthesize {count} tasks; ask for zero or more")
    request = {"command": "synthesize", "count": count, "seed": seed, "max_tries": TRIES_PER_TASK * count}
    return _parse(SynthesisReport, await run_worker(request, timeout_s, settings))


async def check_task_sources(
    sources: list[str],
    *,
    narrow: list[str] | None = None,
    timeout_s: float = 120.0,
    settings: Settings | None = None,
) -> list[TaskCheck]:
    """Run the synthesis checks on task sources, in one worker; one verdict per source, in order.

    `narrow` names the sizes kept small when the output is measured at GPU widths (default: batch_size,
    batch, height, width, depth, rows, seq_len, length).

    Raises:
        EvaluatorError: the worker failed or timed out.
    """
    reply = await run_worker({"command": "check", "sources": list(sources), "narrow": narrow}, timeout_s, settings)
    return _parse(_Checks, reply).checks


async def operator_catalogue(*, timeout_s: float = 120.0, settings: Settings | None = None) -> Catalogue:
    """The installed torch's usable operators, probed in a worker.

    Raises:
        EvaluatorError: the worker failed or timed out.
    """
    return _parse(Catalogue, await run_worker({"command": "catalogue"}, timeout_s, settings))


def _parse(model: type[_M], reply: Any) -> _M:
    try:
        return model.model_validate(reply)
    except ValidationError as exc:
        raise EvaluatorError(f"the task synthesis worker replied with an unexpected {model.__name__}: {exc}") from exc


async def run_worker(request: dict[str, Any], timeout_s: float, settings: Settings | None = None) -> Any:
    """Send `request` to a fresh synthesis worker and return its reply. `settings`: the sandbox and the workers'
    limits (default: the settings file and environment, as every command reads them).

    Raises:
        EvaluatorError: the worker could not read the request (our bug), exited or broke the protocol, or ran
            past `timeout_s` (its process group is then killed); the message carries the tail of what it wrote.
    """
    settings = settings if settings is not None else Settings()
    sandbox = await detect_sandbox(settings)
    root = Path(tempfile.mkdtemp(prefix=f"adaexplore-{os.getpid()}-synth-", dir=workspace.exchange_root()))
    (root / "tasks").mkdir()  # the sandbox shows every worker its evaluator's task files, read-only: none here
    worker: WorkerChannel | None = None
    event: object = None
    failure: WorkerDied | WorkerTimeout | None = None
    try:
        async with anyio.create_task_group() as group:
            spawner = ProcessSpawner(group, sandbox=sandbox, exchange_root=root, settings=settings)
            wanted = SpawnRequest(
                role="synth", backend="compile", device=0, env=workspace.worker_env(settings), exchange=root / "w"
            )
            with anyio.move_on_after(timeout_s) as scope:
                try:
                    worker = await spawner.spawn(wanted)
                    await worker.ready(timeout_s)
                    await worker.send(Synthesize(request=request))
                    event = await worker.receive(timeout_s)
                except (WorkerDied, WorkerTimeout) as exc:
                    failure = exc
                finally:
                    if worker is not None:
                        await worker.aclose()
            group.cancel_scope.cancel()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if scope.cancelled_caught:
        raise EvaluatorError(
            f"task synthesis did not finish within {timeout_s:g} s and was stopped; allow more time "
            f"(timeout_s) or ask for fewer tasks.{_tail(worker)}"
        )
    if failure is not None:
        detail = str(failure) or type(failure).__name__
        raise EvaluatorError(f"the task synthesis worker failed ({detail}).{_tail(worker)}") from failure
    if not isinstance(event, Synthesized):
        kind = getattr(event, "kind", None)
        raise EvaluatorError(f"the task synthesis worker answered {kind!r}, not a reply.{_tail(worker)}")
    if event.error is not None:
        raise EvaluatorError(f"the task synthesis worker could not read the request: {event.error}")
    return event.reply


def _tail(worker: WorkerChannel | None) -> str:
    text = worker.output.text()[-_STDERR_TAIL:].strip() if worker is not None else ""
    return f" It wrote:\n{text}" if text else " It wrote nothing."
