"""Full coverage at full size, end to end: a kernel launched over a grid of fixed size passes the trials at the
small sizes (one program covers the whole output there) and is a `mismatch` that says where, through `adaexplore
profile` on a KernelBench Level 2 problem with default settings, and a run's steps, where it never becomes the best
kernel (nor does a verdict stored before the check existed come back for it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adaexplore.config import Settings
from adaexplore.domain import Kind
from adaexplore.executor import Evaluator, code_hash
from adaexplore.store import NewEvaluation, open_store
from adaexplore.tools import (
    BestKernelRequest,
    CompileAndProfileRequest,
    CreateTaskRequest,
    Services,
    StartRunRequest,
    best_kernel,
    compile_and_profile,
    create_task,
    start_run,
)
from tests.conftest import ON_GPU

DATA = Path(__file__).parent / "data"
TASK = DATA / "scale_relu_task.py"  # 64 x 1000, SMALL_SIZES 3 x 77
CORRECT = (DATA / "scale_relu_kernel.py").read_text()
FIXED_GRID = (DATA / "scale_relu_fixed_grid_kernel.py").read_text()  # one program of 256 elements
PROBLEM_30 = (
    Path(__file__).resolve().parents[3]
    / "shared"
    / "data"
    / "kernelbench"
    / "level2"
    / ("30_Gemm_GroupNorm_Hardtanh.py")
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(ON_GPU, reason="the CPU path's check; on a GPU the trials run at the full sizes"),
]


@pytest.mark.skipif(not PROBLEM_30.is_file(), reason="the KernelBench problems (shared/data/kernelbench) are absent")
def test_profile_finds_a_fixed_grid_on_a_level2_problem_with_default_settings(tmp_path: Path) -> None:
    written = tmp_path / "result.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "adaexplore",
            "profile",
            str(PROBLEM_30),
            str(DATA / "fixed_grid" / "level2_30_gemm_groupnorm.py"),
            "--json",
            str(written),
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, ADAEXPLORE_HOME=str(tmp_path)),
        timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    result = json.loads(written.read_text())
    assert result["status"] == "mismatch"
    assert (
        "output 0 (shape [1024, 8192]): 8,355,840 of its 8,388,608 elements are never written, from index [4, 0] "
        "to [1023, 8191]; what writes into its buffer: _group_norm_hardtanh over grid (64,)"
    ) in result["message"]


async def test_a_run_never_makes_a_fixed_grid_kernel_its_best(evaluator: Evaluator, tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    svc = Services(settings=settings, store=open_store(settings.database_url), evaluator=evaluator)
    task = create_task(svc, CreateTaskRequest(path=str(TASK)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=1))
    honest = await compile_and_profile(
        svc, CompileAndProfileRequest(code=CORRECT, run_id=run.run_id, parent_id=run.root_node_id, action="large")
    )
    assert honest.status == "ok" and honest.is_new_best, honest.message
    assert honest.evaluation is not None and honest.evaluation.phases["coverage"] < 1.0  # the check ran, quickly
    # an `ok` verdict of the fixed-grid kernel stored under the protocol before the check, with a large estimate,
    # as a run of then would have kept it: identical code must not reuse it
    import adaexplore.executor.host._environment as environment_module

    saved = environment_module.PROTOCOL_VERSION
    environment_module.PROTOCOL_VERSION = 2
    try:
        before = evaluator.fingerprint()
    finally:
        environment_module.PROTOCOL_VERSION = saved
    assert before != evaluator.fingerprint()
    assert honest.evaluation is not None
    provenance = honest.evaluation.provenance.model_copy(
        update={"code_hash": code_hash(FIXED_GRID), "environment": before}
    )
    stale = honest.evaluation.model_copy(update={"provenance": provenance})
    other = start_run(svc, StartRunRequest(task_id=task.task_id, seed=2))
    svc.store.add_child(
        other.run_id,
        other.root_node_id,
        Kind.large,
        code=FIXED_GRID,
        code_hash=code_hash(FIXED_GRID),
        context_ids=[],
        task_id=task.task_id,
        evaluation=NewEvaluation(
            code_hash=code_hash(FIXED_GRID),
            environment=before,
            mode="strict",
            status="ok",
            speedup=None,
            estimated_speedup=250.0,
            result=stale.model_dump_json(),
        ),
        reward=1.0,
    )
    cheat = await compile_and_profile(
        svc,
        CompileAndProfileRequest(code=FIXED_GRID, run_id=run.run_id, parent_id=honest.node_id, action="small"),
    )
    assert not cheat.reused_evaluation
    assert cheat.status == "mismatch" and not cheat.is_new_best, cheat.message
    # the trials at the small sizes (3 x 77, one program of 256 covers it) passed; the full sizes did not
    assert cheat.message.startswith("correct at the small sizes, but at the task's full sizes"), cheat.message
    assert (
        "output 0 (shape [64, 1000]): 63,744 of its 64,000 elements are never written, from index [0, 256] to "
        "[63, 999]; what writes into its buffer: scale_relu_kernel over grid (1,)"
    ) in cheat.message
    assert cheat.evaluation is not None and "interpret" in [b.value for b in cheat.evaluation.backends]
    assert cheat.evaluation.estimate is None and cheat.evaluation.estimated_speedup is None
    assert best_kernel(svc, BestKernelRequest(run_id=run.run_id)).code == CORRECT
