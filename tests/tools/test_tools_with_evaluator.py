"""One AdaExplore step through the tools with the real evaluator (real workers, real Triton)."""

from __future__ import annotations

from pathlib import Path

import pytest

from adaexplore.config import Settings
from adaexplore.executor import Evaluator
from adaexplore.store import open_store
from adaexplore.tools import (
    BestKernelRequest,
    CompileAndProfileRequest,
    CreateTaskRequest,
    ExpandNodeRequest,
    GetNodeRequest,
    SelectUctRequest,
    Services,
    StartRunRequest,
    best_kernel,
    compile_and_profile,
    create_task,
    expand_node,
    get_node,
    select_uct,
    start_run,
)

DATA = Path(__file__).parents[1] / "executor" / "data"

pytestmark = pytest.mark.anyio


async def test_a_step_with_the_real_evaluator_stores_its_verdict_and_reuses_it(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    settings = Settings(home=tmp_path)
    svc = Services(settings=settings, store=open_store(settings.database_url), evaluator=evaluator)
    task = create_task(svc, CreateTaskRequest(path=str(DATA / "scale_relu_task.py")))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=1))
    chosen = select_uct(svc, SelectUctRequest(run_id=run.run_id))
    context = expand_node(svc, ExpandNodeRequest(run_id=run.run_id, node_id=chosen.node_id, action=chosen.action))
    kernel = (DATA / "scale_relu_kernel.py").read_text()
    first = await compile_and_profile(svc, CompileAndProfileRequest(code=kernel, expansion_id=context.expansion_id))
    assert first.status == "ok" and first.is_new_best and not first.reused_evaluation, first.message
    node = get_node(svc, GetNodeRequest(node_id=first.node_id))
    assert node.evaluation is not None and node.evaluation.correctness is not None
    assert node.evaluation.provenance.environment == evaluator.fingerprint()
    again = await compile_and_profile(
        svc,
        CompileAndProfileRequest(
            code=kernel + "\n# unchanged code\n", run_id=run.run_id, parent_id=first.node_id, action="small"
        ),
    )
    assert again.reused_evaluation and again.status == "ok"
    assert best_kernel(svc, BestKernelRequest(run_id=run.run_id)).code == kernel


async def test_a_verdict_is_reused_only_for_the_backends_that_gave_it(evaluator: Evaluator, tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    svc = Services(settings=settings, store=open_store(settings.database_url), evaluator=evaluator)
    task = create_task(svc, CreateTaskRequest(path=str(DATA / "scale_relu_task.py")))
    kernel = (DATA / "scale_relu_kernel.py").read_text()
    # a run judges every kernel with its own backend: one run per backend
    runs = {
        b: start_run(svc, StartRunRequest(task_id=task.task_id, seed=1, backend=b)) for b in ("compile", "interpret")
    }

    def ask(backend: str) -> CompileAndProfileRequest:
        run = runs[backend]
        return CompileAndProfileRequest(code=kernel, run_id=run.run_id, parent_id=run.root_node_id, action="large")

    compiled = await compile_and_profile(svc, ask("compile"))
    assert compiled.status == "ok" and not compiled.reused_evaluation
    assert compiled.evaluation is not None and compiled.evaluation.correctness is None  # compiled, never run
    # the compile-only verdict says nothing about the numbers: the interpreter runs it
    interpreted = await compile_and_profile(svc, ask("interpret"))
    assert not interpreted.reused_evaluation
    assert interpreted.evaluation is not None and interpreted.evaluation.correctness is not None
    again = await compile_and_profile(svc, ask("interpret"))
    assert again.reused_evaluation and again.evaluation is not None
    assert again.evaluation.backends == interpreted.evaluation.backends
