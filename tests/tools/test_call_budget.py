"""compile_and_profile gives the candidate the settings' budget for one call (executor.call_budget_s)."""

from __future__ import annotations

from pathlib import Path

import pytest

from adaexplore.config import ExecutorConfig, Settings
from adaexplore.store import open_store
from adaexplore.tools import CompileAndProfileRequest, CreateTaskRequest, Services, compile_and_profile, create_task
from tests.fakes import FakeEvaluator, by_hash

TASK_FILE = Path(__file__).parents[1] / "executor" / "data" / "scale_relu_task.py"

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("budget", [40.0, 12.5, None])
async def test_each_call_gives_the_candidate_the_configured_budget(tmp_path: Path, budget: float | None) -> None:
    settings = Settings(home=tmp_path, executor=ExecutorConfig(call_budget_s=budget))
    evaluator = FakeEvaluator(by_hash)
    svc = Services(settings=settings, store=open_store(settings.database_url), evaluator=evaluator)
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    await compile_and_profile(svc, CompileAndProfileRequest(code="kernel a", task_id=task.task_id))
    await compile_and_profile(svc, CompileAndProfileRequest(code="kernel b", task_id=task.task_id))
    assert evaluator.budgets == [budget, budget]


def test_the_default_budget_returns_before_a_60_s_client_timeout() -> None:
    assert ExecutorConfig().call_budget_s is not None and ExecutorConfig().call_budget_s <= 45
