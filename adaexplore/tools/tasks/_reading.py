"""Reading the store through the tools: what the command line, the MCP server's resources and prompts, and the
headless loop show of tasks, nodes and runs, without reaching past this layer."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import NoReturn

from adaexplore.config import Settings
from adaexplore.domain import Evaluation, Status
from adaexplore.errors import AdaexploreError, NotFoundError, RequestError
from adaexplore.executor import model_view
from adaexplore.prompts import DistillContext, render_distill_rule
from adaexplore.store import (
    MAX_INTEGER,
    ModelCall,
    NodeRecord,
    RunRecord,
    UsageTotals,
    check_store,
    open_store,
    redact,
    store_exists,
)
from adaexplore.store import StoreCheck as DatabaseCheck
from adaexplore.tools._service import Services

__all__ = [
    "MAX_INTEGER",
    "DatabaseCheck",
    "ModelCall",
    "NodeRecord",
    "RunRecord",
    "UsageTotals",
    "check_database",
    "database_exists",
    "distill_prompt",
    "node_code",
    "node_evaluation_json",
    "node_note",
    "node_record",
    "open_reader",
    "record_model_call",
    "run_list",
    "run_record",
    "set_node_note",
    "stop_run",
    "task_source",
    "task_view",
    "usage",
]


class _NoEvaluator:
    """The evaluator of services opened to read: a command that only reads never starts a worker."""

    def _refuse(self, *_: object, **__: object) -> NoReturn:
        raise AdaexploreError("this command opened the store only, to read it; it cannot evaluate kernels")

    evaluate = check_task = ready = fingerprint = _refuse


def database_exists(settings: Settings) -> bool:
    """Whether the database the settings name is there already (a read-only command creates none)."""
    return store_exists(settings.database_url)


def database_label(settings: Settings) -> str:
    """The database the settings name, for the user: an SQLite file's path, or a PostgreSQL URL without its
    password."""
    url = settings.database_url
    return url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else redact(url)


def check_database(settings: Settings) -> DatabaseCheck:
    """Reach the database the settings name (a PostgreSQL server is connected to, with a trivial query) and read
    its schema version and number of runs, changing nothing.

    Raises:
        ConfigError: the URL is malformed or of no supported kind, or psycopg is missing for a PostgreSQL URL.
        StoreError: the server cannot be reached or refused the connection (its own message, without the
            password), or the database cannot be read.
    """
    return check_store(settings.database_url)


@contextlib.contextmanager
def open_reader(settings: Settings) -> Iterator[Services]:
    """Services over the store alone, for commands that read or edit records and evaluate nothing."""
    store = open_store(settings.database_url)
    try:
        yield Services(settings=settings, store=store, evaluator=_NoEvaluator())
    finally:
        store.close()


def run_record(svc: Services, run_id: str) -> RunRecord:
    """A run as stored: its status, steps, best and final nodes, config.

    Raises:
        NotFoundError: the run id is unknown.
    """
    return svc.store.run(run_id)


def run_list(svc: Services) -> list[RunRecord]:
    """Every run, in the order they were made."""
    return svc.store.runs()


def node_record(svc: Services, node_id: int) -> NodeRecord:
    """A node as stored: its code, verdict status, speedup and statistics.

    Raises:
        NotFoundError: the node id is unknown.
    """
    return svc.store.node(node_id)


def task_source(svc: Services, task_id: str) -> str:
    """Raises: NotFoundError: the task id is unknown."""
    return svc.store.task(task_id).source


def task_view(svc: Services, task_id: str) -> str:
    """A task's source as a model reads it: the encoded bytes of inputs a workload gives (GIVEN_TENSORS) elided.

    Raises: NotFoundError: the task id is unknown.
    """
    return model_view(svc.store.task(task_id).source)


def node_code(svc: Services, node_id: int) -> str:
    """A node's kernel.

    Raises:
        NotFoundError: the node id is unknown, or names a run's root, which holds the task and no kernel.
    """
    node = svc.store.node(node_id)
    if node.parent_id is None:
        raise NotFoundError(f"node {node_id} is a run's root: it holds the task, not a kernel")
    return node.code


def node_evaluation_json(svc: Services, node_id: int) -> str:
    """A node's whole evaluation as JSON, untrimmed.

    Raises:
        NotFoundError: the node id is unknown, or the node was never evaluated (a run's root).
    """
    node = svc.store.node(node_id)
    if node.evaluation_id is None:
        raise NotFoundError(
            f"node {node_id} has no evaluation: only the nodes compile_and_profile made have one, not a run's root"
        )
    return svc.store.evaluation(node.evaluation_id).result


def distill_prompt(svc: Services, node_id: int) -> str:
    """The request to turn a failed node into one "You cannot …" rule.

    Raises:
        NotFoundError: the node id is unknown.
        RequestError: the node was never evaluated, or it passed, so there is nothing to learn from it.
    """
    node = svc.store.node(node_id)
    if node.evaluation_id is None:
        raise RequestError(
            f"node {node_id} has no evaluation to learn from (a run's root is never evaluated); pass the node_id of "
            "a kernel that failed in compile_and_profile"
        )
    evaluation = Evaluation.model_validate_json(svc.store.evaluation(node.evaluation_id).result)
    if evaluation.status is Status.ok:
        raise RequestError(
            f"node {node_id} passed (status ok): nothing failed, so there is no rule to learn from it; pass the "
            "node_id of a kernel that failed"
        )
    error = evaluation.error.traceback if evaluation.error and evaluation.error.traceback else evaluation.message
    return render_distill_rule(DistillContext(code=node.code, status=evaluation.status.value, error=error[-6000:]))


def stop_run(svc: Services, run_id: str, reason: str) -> None:
    """Mark a run stopped with its reason, kept for `runs list` and get_run until its next step."""
    svc.store.stop_run(run_id, reason)


def set_run_kernels(svc: Services, run_id: str, folder: str) -> None:
    """Record the folder the offline generator (replay) serves the run's kernels from, which a resume reads."""
    svc.store.set_run_kernels(run_id, folder)


def node_note(svc: Services, node_id: int) -> str:
    """What the writer of a node noted about it (a problem with its reply), or ""."""
    return svc.store.note(node_id) or ""


def set_node_note(svc: Services, node_id: int, note: str) -> None:
    svc.store.set_note(node_id, note)


def usage(svc: Services, *, run_id: str | None = None) -> UsageTotals:
    """The model calls filed for a run (or all of them): tokens, calls and time."""
    return svc.store.usage(run_id=run_id)


def record_model_call(svc: Services, call: ModelCall) -> None:
    svc.store.record_model_call(call)
