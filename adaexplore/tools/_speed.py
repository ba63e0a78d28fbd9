"""Speeds in the tools' words: the target GPU, a task's speed of light, and what ranks a run's kernels."""

from __future__ import annotations

from adaexplore.domain import Evaluation, Mode, SpeedOfLight
from adaexplore.executor import Task, calibration_for, describe_sol, sol_for, target_gpu
from adaexplore.roofline import GpuSpec, TaskWork, gpu_spec, known_gpus
from adaexplore.store import RunRecord, TaskRecord
from adaexplore.tools._machine import machine
from adaexplore.tools._service import Services

__all__ = [
    "TaskWork",
    "calibration_sentence",
    "check_target_gpu",
    "describe_sol",
    "known_target_gpus",
    "ranking_sentence",
    "stored_work",
    "task_speed_of_light",
]


def known_target_gpus() -> list[str]:
    """The GPUs whose peaks adaexplore knows."""
    return known_gpus()


def check_target_gpu(name: str) -> str:
    """The table's name for a target GPU.

    Raises:
        ConfigError: the table holds no GPU of that name; the message lists those it holds.
    """
    return gpu_spec(name).name


def _target(svc: Services) -> GpuSpec | None:
    return target_gpu(svc.settings.executor, machine(svc), 0)


def stored_work(record: TaskRecord) -> TaskWork | None:
    """What the task's reference does at full size, as create_task recorded it (None: not recorded)."""
    return TaskWork.model_validate_json(record.work) if record.work else None


def task_speed_of_light(svc: Services, task: Task, work: TaskWork | None, mode: str) -> SpeedOfLight | None:
    """The task's speed of light on the target GPU under `mode`'s tolerance (None without a record of its
    reference, or for a GPU the table does not know)."""
    return sol_for(task, Mode(mode), work, _target(svc))


def _run_evaluation(svc: Services, run: RunRecord) -> Evaluation | None:
    """An evaluation of the run that carries the task's speed of light: its best node's, else its latest one's."""
    for node_id in (run.best_node_id, svc.store.latest_evaluated_node(run.id)):
        if node_id is None:
            continue
        result = svc.store.node_result(node_id, run.id)
        if result is not None:
            evaluation = Evaluation.model_validate_json(result)
            if evaluation.speed_of_light is not None:
                return evaluation
    return None


def ranking_sentence(svc: Services, run: RunRecord, task: Task, record: TaskRecord) -> str:
    """The step instructions' paragraph on speed: the task's speed of light, eager PyTorch's measured time where a
    GPU measured it, and what ranks the run's kernels (measured time, or the estimate where nothing is timed)."""
    evaluation = _run_evaluation(svc, run)
    sol = evaluation.speed_of_light if evaluation is not None else None
    if sol is None:
        sol = task_speed_of_light(svc, task, stored_work(record), run.mode)
    eager = None
    if evaluation is not None and evaluation.timing is not None:
        timing = evaluation.timing
        eager = timing.reference.value(timing.statistic)
    parts = []
    if sol is not None:
        parts.append(describe_sol(sol, eager) + ".")
    environment = machine(svc)
    if environment is not None and environment.has_gpu:
        parts.append("Kernels are timed on the GPU and ranked by their measured time.")
    else:
        gpu = sol.gpu if sol is not None else "H200"
        parts.append(f"No GPU here: correct kernels rank by their estimated time on an {gpu} (the verdicts say how).")
        parts.append(calibration_sentence(svc, gpu))
    return " ".join(parts)


def calibration_sentence(svc: Services, gpu: str) -> str:
    """Which efficiencies the estimates for `gpu` use: the calibration this store's verdicts of that GPU fitted
    (`adaexplore calibrate`), or the package's."""
    fitted = calibration_for(gpu_spec(gpu), svc.store.calibrations())
    if fitted is None:
        return "The estimate uses adaexplore's own efficiencies (no calibration of this store for that GPU)."
    return f"The estimate uses {fitted.label()}, fitted to this store's verdicts of that GPU."
