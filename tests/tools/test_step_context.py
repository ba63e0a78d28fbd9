"""What a step's writer reads beside the kernels (issue 40, item 2), and the run's brief given once (item 1): a
large step sees the run's best kernels from wherever it grows, the root too; a small step lists the edits already
made from its kernel; a step from a failed node says why it failed; the mode's facts on TF32 and what the
evaluator found about the task are said; an MCP client gets the brief with start_run and again only after it
changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from adaexplore.domain import AuditFlag
from adaexplore.executor import Status, Task
from adaexplore.store import open_store
from adaexplore.tools import (
    CompileAndProfileRequest,
    CreateTaskRequest,
    ExpandNodeRequest,
    Services,
    StartRunRequest,
    compile_and_profile,
    create_task,
    edit_rule,
    expand_node,
    list_rules,
    start_run,
    step_answer,
)
from tests.conftest import Databases
from tests.fakes import FakeEvaluator

TASK_FILE = Path(__file__).parents[1] / "executor" / "data" / "scale_relu_task.py"
pytestmark = pytest.mark.anyio


def kernel(tag: str, body: str = "y = x") -> str:
    head = f"TAG = {tag!r}\nimport torch\n\n"
    return head + f"class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        {body}\n        return y\n"


def tag_of(code: str) -> str:
    return code.split("'")[1]


VERDICTS = {"fast": (Status.ok, 2.0), "slow": (Status.ok, 1.2), "broken": (Status.mismatch, None)}


class TaggedEvaluator(FakeEvaluator):
    """Verdicts by the kernel's first-line tag; a kernel tagged `zeros` comes back with the audit flag the
    evaluator sets where an all-zero output passes."""

    def __init__(self) -> None:
        super().__init__(lambda code, _: VERDICTS.get(tag_of(code), (Status.ok, 1.0)))

    async def evaluate(self, task: Task, code: str, options: object = None, *, progress: object = None) -> object:  # type: ignore[override]
        evaluation = await super().evaluate(task, code, options, progress=progress)  # type: ignore[arg-type]
        if tag_of(code) == "zeros":
            said = "an all-zero output 0 passes the tolerance"
            flag = AuditFlag(code="ill_posed_task", severity="warn", message=said)
            evaluation.audit.flags.append(flag)
        return evaluation


@pytest.fixture
def svc(databases: Databases, tmp_path: Path) -> Services:
    settings = databases.settings(tmp_path)
    return Services(settings=settings, store=open_store(settings.database_url), evaluator=TaggedEvaluator())


async def grow(svc: Services, run_id: str, node_id: int, action: str, code: str) -> int:
    context = expand_node(svc, ExpandNodeRequest(run_id=run_id, node_id=node_id, action=action))
    made = await compile_and_profile(svc, CompileAndProfileRequest(code=code, expansion_id=context.expansion_id))
    assert made.node_id is not None
    return made.node_id


async def test_a_large_step_from_the_root_shows_the_best_kernels_of_the_other_branches(svc: Services) -> None:
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=1))
    slow = await grow(svc, run.run_id, run.root_node_id, "large", kernel("slow"))
    fast = await grow(svc, run.run_id, run.root_node_id, "large", kernel("fast"))
    await grow(svc, run.run_id, run.root_node_id, "large", kernel("broken"))
    step = expand_node(svc, ExpandNodeRequest(run_id=run.run_id, node_id=run.root_node_id, action="large"))
    assert [k.node_id for k in step.pool] == [fast, slow]  # correct ones only, the fastest first
    assert "TAG = 'fast'" in step.instructions and "TAG = 'slow'" in step.instructions
    assert "No correct kernel exists" not in step.instructions


async def test_a_small_step_lists_the_edits_already_made_from_its_kernel(svc: Services) -> None:
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=1))
    base = await grow(svc, run.run_id, run.root_node_id, "large", kernel("slow"))
    child = await grow(svc, run.run_id, base, "small", kernel("slow", "y = x * 1.0  # BLOCK = 256"))
    step = expand_node(svc, ExpandNodeRequest(run_id=run.run_id, node_id=base, action="small"))
    assert "## Steps already taken from the current kernel" in step.instructions
    line = next(x for x in step.instructions.splitlines() if x.startswith(f"- node {child} "))
    assert line == f"- node {child} (small step, ok, 1.200x): +1/-1 lines: `y = x * 1.0 # BLOCK = 256`"
    first = expand_node(svc, ExpandNodeRequest(run_id=run.run_id, node_id=child, action="small"))
    assert "Steps already taken" not in first.instructions  # a node without children lists none


async def test_a_large_step_from_a_failed_node_says_why_it_failed(svc: Services) -> None:
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=1))
    broken = await grow(svc, run.run_id, run.root_node_id, "large", kernel("broken"))
    step = expand_node(svc, ExpandNodeRequest(run_id=run.run_id, node_id=broken, action="large"))
    assert f"Node {broken} (large step) failed: mismatch: scripted mismatch." in step.instructions
    good = await grow(svc, run.run_id, run.root_node_id, "large", kernel("slow"))
    from_good = expand_node(svc, ExpandNodeRequest(run_id=run.run_id, node_id=good, action="large"))
    assert "failed:" not in from_good.instructions


async def test_the_modes_tf32_facts_and_the_tasks_own_are_said(svc: Services) -> None:
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    strict = start_run(svc, StartRunRequest(task_id=task.task_id, seed=1))
    assert "run with TF32 off" in strict.brief and "compute exact float32" in strict.brief
    kernelbench = start_run(svc, StartRunRequest(task_id=task.task_id, seed=1, mode="kernelbench"))
    assert "on for convolutions (cuDNN may use TF32)" in kernelbench.brief
    base = await grow(svc, strict.run_id, strict.root_node_id, "large", kernel("zeros"))
    step = expand_node(svc, ExpandNodeRequest(run_id=strict.run_id, node_id=base, action="small"))
    facts = step.step_instructions.split("## What the evaluator found about this task\n", 1)[1]
    assert facts.startswith("- an all-zero output 0 passes the tolerance\n- The outputs are still compared")


async def test_an_mcp_client_gets_the_brief_once_and_again_after_it_changed(svc: Services) -> None:
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=1))
    rule = next(r for r in list_rules(svc, ("active", "pinned")) if r.text in run.brief)
    assert run.brief.startswith(f"# The run brief (version {run.brief_version})")
    first = step_answer(svc, expand_node(svc, ExpandNodeRequest(run_id=run.run_id, node_id=1, action="large")))
    assert rule.text not in first.instructions and f"run brief {run.brief_version} " in first.instructions
    edit_rule(svc, rule.id, "You cannot read a pointer past its block without a mask; mask every tail load.")
    changed = step_answer(svc, expand_node(svc, ExpandNodeRequest(run_id=run.run_id, node_id=1, action="large")))
    assert changed.brief_version != run.brief_version
    assert changed.instructions.startswith(f"# The run brief (version {changed.brief_version})")
    assert "mask every tail load" in changed.instructions and rule.text not in changed.instructions
    again = step_answer(svc, expand_node(svc, ExpandNodeRequest(run_id=run.run_id, node_id=1, action="large")))
    assert "# The run brief" not in again.instructions and f"run brief {changed.brief_version} " in again.instructions
    # headless steps, whose model keeps no conversation, carry the memory and the task whole every time
    whole = expand_node(svc, ExpandNodeRequest(run_id=run.run_id, node_id=1, action="large")).instructions
    assert "mask every tail load" in whole and "## The task" in whole
