"""A run's best kernel out, as a FlashInfer-Bench Solution: a search step on an imported definition through the tools
with the real evaluator, `export`, then FlashInfer-Bench's own loader (its Solution model and TraceSet.from_path)
and its own builder, whose runnable is called on the CPU in Triton's interpreter and checked against the
definition's reference by the package's own error statistics."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from adaexplore.config import Settings
from adaexplore.errors import RequestError
from adaexplore.executor import Evaluator
from adaexplore.store import open_store
from adaexplore.tools import (
    CompileAndProfileRequest,
    CreateTaskRequest,
    ExpandNodeRequest,
    SelectUctRequest,
    Services,
    StartRunRequest,
    compile_and_profile,
    create_checked_task,
    expand_node,
    export_flashinfer_solution,
    select_uct,
    start_run,
)
from tests.conftest import ROOT

flashinfer_bench = pytest.importorskip("flashinfer_bench", reason="the flashinfer extra is not installed")

EXAMPLES = ROOT / "examples" / "flashinfer"
DEFINITION = EXAMPLES / "definitions" / "rmsnorm" / "rmsnorm_h4096.json"
KERNELS = EXAMPLES / "kernels" / "rmsnorm"

pytestmark = pytest.mark.anyio

# Builds the solution with FlashInfer-Bench's builder and runs it on its smallest workload in Triton's interpreter.
CHECK = """
import json, sys
from flashinfer_bench.bench import BenchmarkConfig
from flashinfer_bench.bench.utils import compute_error_stats, gen_inputs
from flashinfer_bench.compile import BuilderRegistry
from flashinfer_bench.data import TraceSet

trace_set = TraceSet.from_path(sys.argv[1])
solution = trace_set.get_solution(sys.argv[2])
definition = trace_set.definitions[solution.definition]
workload = min(trace_set.workloads[definition.name], key=lambda t: t.workload.axes["batch_size"]).workload
inputs = gen_inputs(definition, workload, device="cpu")
registry = BuilderRegistry.get_instance()
out = registry.build(definition, solution)(*inputs)
ref = registry.build_reference(definition)(*inputs)
max_abs, max_rel, exceeds, matched = compute_error_stats(out, ref, BenchmarkConfig())
print(json.dumps({"exceeds": exceeds, "max_abs": max_abs, "dtype": str(out.dtype), "shape": list(out.shape)}))
"""


async def one_step(svc: Services, code: str) -> str:
    task = await create_checked_task(svc, CreateTaskRequest(flashinfer_definition=str(DEFINITION)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=1))
    assert run.run_id
    chosen = select_uct(svc, SelectUctRequest(run_id=run.run_id))
    context = expand_node(svc, ExpandNodeRequest(run_id=run.run_id, node_id=chosen.node_id, action=chosen.action))
    await compile_and_profile(svc, CompileAndProfileRequest(code=code, expansion_id=context.expansion_id))
    return run.run_id


async def test_the_best_kernel_exported_is_a_solution_flashinfer_bench_loads_builds_and_runs(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    settings = Settings(home=tmp_path / "home")
    svc = Services(settings=settings, store=open_store(settings.database_url), evaluator=evaluator)
    run_id = await one_step(svc, (KERNELS / "correct.py").read_text())
    assert svc.store.run(run_id).mode == "flashinfer"  # a FlashInfer-Bench task's runs take its protocol
    trace_set = tmp_path / "set"
    shutil.copytree(EXAMPLES, trace_set)
    out = trace_set / "solutions" / "rmsnorm" / "adaexplore.json"
    path, name = export_flashinfer_solution(svc, run_id, out)
    assert path == out.resolve()

    solution = flashinfer_bench.data.load_json_file(flashinfer_bench.Solution, path)
    assert solution.name == name and solution.author == "adaexplore" and solution.definition == "rmsnorm_h4096"
    assert solution.spec.language == "triton" and solution.spec.entry_point == "kernel.py::run"
    assert not solution.spec.destination_passing_style
    assert f"run {run_id}" in (solution.description or "") and "mode flashinfer" in (solution.description or "")
    assert flashinfer_bench.TraceSet.from_path(str(trace_set)).get_solution(name) == solution

    env = {**os.environ, "TRITON_INTERPRET": "1", "FIB_CACHE_PATH": str(tmp_path / "fib-cache")}
    done = subprocess.run(
        [sys.executable, "-c", CHECK, str(trace_set), name], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    checked = json.loads(done.stdout.strip().splitlines()[-1])
    assert checked == {**checked, "exceeds": False, "dtype": "torch.bfloat16", "shape": [1, 4096]}


async def test_a_run_without_a_correct_kernel_or_on_another_task_is_refused(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    settings = Settings(home=tmp_path / "home")
    svc = Services(settings=settings, store=open_store(settings.database_url), evaluator=evaluator)
    run_id = await one_step(svc, (KERNELS / "wrong.py").read_text())
    with pytest.raises(RequestError, match="has no correct kernel to export"):
        export_flashinfer_solution(svc, run_id, tmp_path / "x.json")
    task = await create_checked_task(svc, CreateTaskRequest(path=str(ROOT / "examples" / "tasks" / "row_softmax.py")))
    other = start_run(svc, StartRunRequest(task_id=task.task_id, seed=1))
    with pytest.raises(RequestError, match="was not imported from a FlashInfer-Bench definition"):
        export_flashinfer_solution(svc, other.run_id, tmp_path / "y.json")
    assert not (tmp_path / "x.json").exists() and not (tmp_path / "y.json").exists()
