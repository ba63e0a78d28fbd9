"""create_task: a task from a file, a module's source or a FlashInfer-Bench definition, registered in the store."""

from __future__ import annotations

from pathlib import Path

from adaexplore.errors import RequestError
from adaexplore.executor import (
    EvaluationOptions,
    Mode,
    Task,
    TaskCheck,
    gpu_device_present,
    read_task_file,
    task_from_source,
)
from adaexplore.tools._models import (
    CreateTaskRequest,
    CreateTaskResult,
)
from adaexplore.tools._service import Services
from adaexplore.tools._speed import describe_sol, stored_work, task_speed_of_light
from adaexplore.tools.tasks._flashinfer import flashinfer_task
from adaexplore.tools.tasks._task_sizes import checks_on_cpu, given_sizes, sized_task

__all__ = ["create_checked_task", "create_task"]


# ---- tools ---------------------------------------------------------------------------------------------
def create_task(svc: Services, req: CreateTaskRequest) -> CreateTaskResult:
    """Register a task from its text or a file; the same task (by normalized source) keeps one id. The
    module's text is checked, not run (`create_checked_task` also runs it).

    Raises:
        RequestError: neither or both of source and path were given, or the file is missing.
        TaskError: the text is not a usable task module.
    """
    task, origin = _requested_task(req)
    task, note = given_sizes(task, req.small_sizes)
    if req.small_sizes is None and task.small_sizes is None:
        note += ": create_task reads the text only; create_checked_task derives small sizes"
    return _stored_task(svc, task, origin, note)


async def create_checked_task(
    svc: Services,
    req: CreateTaskRequest,
    *,
    origin: str | None = None,
    backend: str | None = None,
    mode: str | None = None,
) -> CreateTaskResult:
    """`create_task`, once the evaluator has loaded the task as an evaluation would (in its own process:
    import the module, build Model, draw the inputs). A task that fails there is not stored. `origin` says
    where the task came from, for the record (a bench's suite, problem id and file hash), where the request's
    own (text or file name) is not enough. Small sizes are derived where the module has none only when its
    candidates are judged on the CPU backends (`backend`, as the evaluation's option): a GPU judges at the task's
    full sizes, and a size probe there would cost each new task a worker's start for nothing. `mode`: the
    protocol its evaluations will use (default: the settings'), whose reference the check builds, so that the
    task's first evaluation finds it ready.

    Raises:
        RequestError: as create_task.
        TaskError: the text is not a usable task module, or its code fails, with the reason.
    """
    task, requested = _requested_task(req)
    if gpu_device_present():  # whether the GPU judges, the started evaluator says; without one, the CPU does
        await svc.evaluator.ready()
    if checks_on_cpu(svc.evaluator, svc.settings, backend):
        task, note = await sized_task(task, req.small_sizes, svc.settings)  # derived where the module has none
    else:
        task, note = given_sizes(task, req.small_sizes)
        if req.small_sizes is None and task.small_sizes is None:
            note += ": not derived, since candidates are judged on the GPU at the task's full sizes"
    check = await svc.evaluator.check_task(task, EvaluationOptions(mode=Mode(mode)) if mode is not None else None)
    return _stored_task(svc, task, origin or requested, note, check, given=bool(req.small_sizes))


def _requested_task(req: CreateTaskRequest) -> tuple[Task, str]:
    given = [req.source is not None, req.path is not None, req.flashinfer_definition is not None]
    if sum(given) != 1:
        raise RequestError(
            "give the task one way: as source (the module's text), as path (a file), or as flashinfer_definition "
            "(a FlashInfer-Bench Definition file)"
        )
    if req.flashinfer_workloads is not None and req.flashinfer_definition is None:
        raise RequestError("flashinfer_workloads goes with flashinfer_definition")
    if req.flashinfer_definition is not None:
        return flashinfer_task(req.flashinfer_definition, req.flashinfer_workloads, name=req.name)
    if req.path is None:
        return task_from_source(req.source or "", name=req.name or "task"), "text"
    path = Path(req.path)
    if not path.is_file():
        what = "is a directory" if path.is_dir() else "does not exist"
        where = (
            ""
            if path.is_absolute()
            else f" (read as {path.resolve()}: a relative path starts in the folder the server runs in)"
        )
        raise RequestError(
            f"task file {req.path} {what} on the machine adaexplore runs on{where}; give an absolute path, or send "
            "its source instead"
        )
    return task_from_source(read_task_file(path), name=req.name or path.stem), f"file:{path.name}"


def _stored_task(
    svc: Services, task: Task, origin: str, note: str, check: TaskCheck | None = None, *, given: bool = False
) -> CreateTaskResult:
    work = check.work if check is not None else None
    stored = svc.store.put_task(
        task.hash, task.name, task.source, origin, work.model_dump_json() if work is not None else None
    )
    if check is not None and check.checked is not None:
        found = check.degeneracy.model_dump_json() if check.degeneracy is not None else None
        stored = svc.store.set_task_degeneracy(task.hash, found, check.checked)
    note += _sizes_warning(check, given)
    sol = task_speed_of_light(svc, task, stored_work(stored), svc.settings.executor.mode)
    if sol is not None:
        said = describe_sol(sol)
    elif stored.work is None:
        said = "not known: create_task reads the text only (create_checked_task runs the reference to find it)"
    else:
        said = "not known: the target GPU is not in adaexplore's table"
    return CreateTaskResult(
        task_id=task.hash,
        name=stored.name,  # the same task registered again keeps the name it was first given
        init_params=task.init_params,
        forward_params=task.forward_params,
        small_sizes=bool(task.small_sizes),
        small_sizes_note=note,
        input_sets=list(task.input_sets or {}),
        speed_of_light=said,
        speed_of_light_ms=sol.ms if sol is not None else None,
        degenerate=degeneracy.line() if (degeneracy := stored.degeneracy) is not None else None,
    )


def _sizes_warning(check: TaskCheck | None, given: bool) -> str:
    """A warning where the small sizes the CPU checks run at make the task degenerate, though its full sizes do not
    (or were not checked, for sizes given with the request): such sizes are accepted, not silently."""
    if check is None:
        return ""
    if check.small_degeneracy is not None:
        found, full = check.small_degeneracy, "though at its full sizes it is not"
    elif given and check.degeneracy is not None and check.degeneracy.sizes == "small":
        found, full = check.degeneracy, "and its full sizes were not checked"
    else:
        return ""
    return (
        f"; WARNING: at these small sizes {found.what()}, {full}: the CPU checks there cannot tell a kernel that "
        "writes one value from a correct one; give other small_sizes"
    )
