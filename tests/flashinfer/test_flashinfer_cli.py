"""The command line over FlashInfer-Bench files: create-task (with the module written out), a replay bench over
the example trace set in mode flashinfer, export of its runs, and what is refused, as a user runs them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ON_GPU, ROOT

pytest.importorskip("flashinfer_bench", reason="the flashinfer extra is not installed")

EXAMPLES = ROOT / "examples" / "flashinfer"
RMSNORM = EXAMPLES / "definitions" / "rmsnorm" / "rmsnorm_h4096.json"


def adaexplore(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # the format's way in and out is under test, not the sm_90 compile check (tests/test_examples.py and the
    # evaluator's tests have it), which would double the CPU each evaluation takes: the interpreter alone checks
    env = {**os.environ, "ADAEXPLORE_HOME": str(home), "ADAEXPLORE_BACKEND": "auto" if ON_GPU else "interpret"}
    return subprocess.run(
        [sys.executable, "-m", "adaexplore", *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600
    )


def test_create_task_registers_a_definition_and_writes_its_module(tmp_path: Path) -> None:
    out = tmp_path / "task.py"
    done = adaexplore(tmp_path / "home", "create-task", "--flashinfer", str(RMSNORM), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "(rmsnorm_h4096)" in done.stdout and "input sets: 5 (" in done.stdout
    assert "forward(hidden_states, weight)" in done.stdout
    module = out.read_text()
    assert "def run(hidden_states, weight):" in module and "INPUT_SETS = {" in module
    # the module written out is a task of its own: profile takes it, in the definition's mode
    profiled = adaexplore(
        tmp_path / "home", "profile", str(out), str(EXAMPLES / "kernels" / "rmsnorm" / "wrong.py"), "--json"
    )
    assert profiled.returncode == 1, profiled.stderr
    verdict = json.loads(profiled.stdout)
    assert verdict["status"] == "mismatch" and verdict["mode"] == "flashinfer"
    assert verdict["correctness"]["tolerance"]["kind"] == "either"


def test_a_replay_bench_over_the_trace_set_and_the_export_of_its_runs(tmp_path: Path) -> None:
    home, kernels = tmp_path / "home", tmp_path / "kernels"
    kernels.mkdir()
    shutil.copy(EXAMPLES / "kernels" / "rmsnorm" / "correct.py", kernels / "rmsnorm_h4096.py")
    shutil.copy(EXAMPLES / "kernels" / "rmsnorm" / "wrong.py", kernels / "3.py")
    report = tmp_path / "bench.json"
    done = adaexplore(home, "bench", str(EXAMPLES), "--ids", "2,3", "--replay", str(kernels), "--json", str(report))
    assert done.returncode == 0, done.stderr
    bench = json.loads(report.read_text())
    assert bench["bench"]["mode"] == "flashinfer"
    rows = {row["name"]: row for row in bench["problems"]}
    assert rows["rmsnorm_h4096"]["status"] == "ok" and rows["rmsnorm_h8192"]["status"] == "mismatch"
    solution = tmp_path / "solution.json"
    exported = adaexplore(home, "export", rows["rmsnorm_h4096"]["run_id"], "--flashinfer-solution", str(solution))
    assert exported.returncode == 0, exported.stderr
    assert "FlashInfer-Bench solution adaexplore_rmsnorm_h4096_" in exported.stdout
    assert json.loads(solution.read_text())["definition"] == "rmsnorm_h4096"
    refused = adaexplore(home, "export", rows["rmsnorm_h8192"]["run_id"], "--flashinfer-solution", str(solution))
    assert refused.returncode == 2 and "has no correct kernel to export" in refused.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["create-task"], "give a task module (`adaexplore create-task TASK.py`) or a FlashInfer-Bench definition"),
        (["create-task", "t.py", "--workloads", "w"], "--workload and --workloads go with --flashinfer"),
        (["create-task", "--flashinfer", "nothing.json"], "nothing.json does not exist"),
        (["export", "run-nope", "--flashinfer-solution", "x.json"], "no run has id 'run-nope'"),
    ],
)
def test_bad_input_is_refused_in_one_line_with_exit_code_2(tmp_path: Path, args: list[str], message: str) -> None:
    done = adaexplore(tmp_path / "home", *args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
