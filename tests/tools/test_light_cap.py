"""A kernel measured or estimated faster than its task's speed of light earns no more than the floor allows: the
run rewards and ranks it at eager's time over the speed of light (its verdict carries the faster_than_light
warning, tests/executor/test_faster_than_light.py), and an honest kernel keeps its own speedup."""

from __future__ import annotations

from pathlib import Path

import pytest

from adaexplore.config import Settings
from adaexplore.domain import Estimate, SpeedOfLight
from adaexplore.executor import Evaluation, EvaluationOptions, Status, Task
from adaexplore.search import reward
from adaexplore.store import open_store
from adaexplore.tools import (
    CompileAndProfileRequest,
    CreateTaskRequest,
    ExpandNodeRequest,
    GetNodeRequest,
    SelectUctRequest,
    Services,
    StartRunRequest,
    compile_and_profile,
    create_task,
    expand_node,
    get_node,
    select_uct,
    start_run,
)
from tests.fakes import FakeEvaluator, make_evaluation

TASK_FILE = Path(__file__).parents[1] / "executor" / "data" / "scale_relu_task.py"
SOL_MS = 0.2  # eager takes 1 ms in the script: no kernel can be more than 5x faster
CEILING = 1.0 / SOL_MS

pytestmark = pytest.mark.anyio


class LitEvaluator(FakeEvaluator):
    """Scripted verdicts that carry the task's speed of light: measured on a GPU, or estimated where the code
    says `untimed`."""

    def __init__(self) -> None:
        super().__init__(lambda code, _: (Status.ok, float(code.split()[-1])))

    async def evaluate(
        self, task: Task, code: str, options: EvaluationOptions | None = None, *, progress: object = None
    ) -> Evaluation:
        speedup = float(code.split()[-1])
        sol = SpeedOfLight(gpu="H200", ms=SOL_MS, bound="compute", memory_ms=0.01, compute_ms=SOL_MS, bytes=1, flops=1)
        if code.startswith("untimed"):
            self.calls += 1
            verdict = make_evaluation(task, code, Status.ok, None)
            estimate = Estimate(gpu="H200", ms=1.0 / speedup, reference_ms=1.0, speedup=speedup, summary="estimated")
            return verdict.model_copy(update={"speed_of_light": sol, "estimate": estimate, "timed": False})
        verdict = await super().evaluate(task, code, options, progress=progress)
        fraction = SOL_MS * speedup  # the script's kernel takes 1/speedup ms
        return verdict.model_copy(update={"speed_of_light": sol.model_copy(update={"fraction": fraction})})


async def step(svc: Services, run_id: str, code: str) -> int:
    chosen = select_uct(svc, SelectUctRequest(run_id=run_id))
    context = expand_node(svc, ExpandNodeRequest(run_id=run_id, node_id=chosen.node_id, action=chosen.action))
    done = await compile_and_profile(svc, CompileAndProfileRequest(code=code, expansion_id=context.expansion_id))
    assert done.node_id is not None
    return done.node_id


@pytest.mark.parametrize("kind", ["timed", "untimed"])
async def test_a_kernel_faster_than_light_is_rewarded_and_ranked_at_the_floor(tmp_path: Path, kind: str) -> None:
    settings = Settings(home=tmp_path)
    svc = Services(settings=settings, store=open_store(settings.database_url), evaluator=LitEvaluator())
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=3, total_steps=4))
    honest = get_node(svc, GetNodeRequest(node_id=await step(svc, run.run_id, f"{kind} kernel 3")))
    lit = get_node(svc, GetNodeRequest(node_id=await step(svc, run.run_id, f"{kind} kernel 20")))
    ranked = (lambda n: n.speedup) if kind == "timed" else (lambda n: n.estimated_speedup)
    assert ranked(honest) == pytest.approx(3.0) and honest.reward == pytest.approx(reward("ok", 3.0))
    # 20x claimed, 5x allowed: credited the ceiling, never above it
    assert ranked(lit) == pytest.approx(CEILING) and lit.reward == pytest.approx(reward("ok", CEILING))
    assert lit.reward is not None and lit.reward < reward("ok", 20.0)
    assert lit.evaluation is not None and lit.evaluation.speedup_ceiling == pytest.approx(CEILING)
