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


@pytest.mark.parametrize(
    ("protocol", "backend", "given"),
    [(None, "cuda", None), (300.0, "cuda", 300.0), (None, "interpret", 40.0), (300.0, "interpret", 300.0)],
)
async def test_a_headless_step_gives_the_protocols_budget_not_an_mcp_calls(
    tmp_path: Path, protocol: float | None, backend: str, given: float | None
) -> None:
    """No client waits on a headless explore's or a bench's step: its candidate gets executor.protocol_budget_s,
    never the MCP call's 40 s of wall time, which timed out an honest autotuned GEMM of KernelBench at full size
    on a GPU. Unset, a GPU leaves each phase its own timeout, and the CPU backends (at small sizes) give the call's
    budget in CPU time alone, the compiler's not counted, so that a hang ends and a busy machine changes no
    verdict."""
    from adaexplore.agent import Explorer
    from adaexplore.bench._runner import FileWriter
    from adaexplore.config import SearchConfig
    from adaexplore.tools import StartRunRequest, start_run

    settings = Settings(
        home=tmp_path,
        executor=ExecutorConfig(call_budget_s=40.0, protocol_budget_s=protocol),
        search=SearchConfig(total_steps=2, final_reevaluation=0, p_large=1.0),
    )
    evaluator = FakeEvaluator(by_hash)
    svc = Services(settings=settings, store=open_store(settings.database_url), evaluator=evaluator)
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=1, backend=backend))
    writer = FileWriter(
        kernels={task.task_id: "import torch\n\nclass ModelNew(torch.nn.Module):\n    pass\n"}, label="f"
    )
    await Explorer(svc, writer, memory_updates=False).run(run.run_id)
    assert evaluator.budgets and evaluator.budgets == [given] * len(evaluator.budgets)
    assert not any(evaluator.budget_walls)
    # an MCP client's call on the same settings still gets the call's budget, in wall time too
    await compile_and_profile(svc, CompileAndProfileRequest(code="kernel c", task_id=task.task_id))
    assert evaluator.budgets[-1] == 40.0 and evaluator.budget_walls[-1]
