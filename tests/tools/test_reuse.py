"""Identical code is judged once: its verdict is reused, a failure found in the sm_90 compile check (which ends the
CPU path there) too, and a `timeout` within the run that saw it alone (elsewhere the machine's load or another
budget may let the same code finish)."""

from __future__ import annotations

from pathlib import Path

import pytest

from adaexplore.domain import Backend, Evaluation
from adaexplore.executor import EvaluationOptions, Status, Task
from adaexplore.store import open_store
from adaexplore.tools import (
    CompileAndProfileRequest,
    CreateTaskRequest,
    Services,
    StartRunRequest,
    compile_and_profile,
    create_task,
    start_run,
)
from tests.conftest import Databases
from tests.fakes import FakeEvaluator

TASK_FILE = Path(__file__).parents[1] / "executor" / "data" / "scale_relu_task.py"

pytestmark = pytest.mark.anyio


class CpuPath(FakeEvaluator):
    """A machine without a GPU: compile, then interpret; a failure in the compile check ends the path there."""

    async def evaluate(
        self, task: Task, code: str, options: EvaluationOptions | None = None, *, progress: object = None
    ) -> Evaluation:
        evaluation = await super().evaluate(task, code, options, progress=progress)
        used = [Backend.compile] if evaluation.status is not Status.ok else [Backend.compile, Backend.interpret]
        return evaluation.model_copy(update={"backends": used})


@pytest.mark.parametrize("status", [Status.timeout, Status.compile_error])
async def test_a_verdict_of_the_compile_check_is_reused_and_a_timeout_within_its_run_alone(
    databases: Databases, tmp_path: Path, status: Status
) -> None:
    settings = databases.settings(tmp_path)
    evaluator = CpuPath(lambda code, _: (status, None))
    svc = Services(settings=settings, store=open_store(settings.database_url), evaluator=evaluator)
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))

    async def step(run_id: str, parent: int) -> bool:
        request = CompileAndProfileRequest(code="kernel that hangs", run_id=run_id, parent_id=parent, action="large")
        result = await compile_and_profile(svc, request, budget="protocol")
        assert result.status == status.value and result.node_id is not None
        return result.reused_evaluation

    first = start_run(svc, StartRunRequest(task_id=task.task_id, seed=1))
    assert not await step(first.run_id, first.root_node_id)
    assert await step(first.run_id, first.root_node_id)  # the same kernel again in its run: not judged again
    assert evaluator.calls == 1
    second = start_run(svc, StartRunRequest(task_id=task.task_id, seed=2))
    reused = await step(second.run_id, second.root_node_id)
    assert reused is (status is not Status.timeout)
    assert evaluator.calls == 1 + (status is Status.timeout)
