"""FlashInfer-Bench Solutions in, as candidates (`profile DEFINITION.json SOLUTION.json`, a replay folder of solutions):
a value-returning or destination-passing Triton solution gets a ModelNew around its entry point and is judged like
any kernel; one in another language, of several files or for another definition is refused with the reason."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adaexplore.errors import RequestError
from adaexplore.tools import kernel_file_code
from tests.conftest import ON_GPU, ROOT

pytest.importorskip("flashinfer_bench", reason="the flashinfer extra is not installed")

EXAMPLES = ROOT / "examples" / "flashinfer"
RMSNORM = EXAMPLES / "definitions" / "rmsnorm" / "rmsnorm_h4096.json"
KERNEL = (EXAMPLES / "kernels" / "rmsnorm" / "correct.py").read_text()

# the sample's kernel behind a destination-passing entry point of another name
DPS_ENTRY = """

def rmsnorm_into(hidden_states, weight, output):
    batch_size, hidden_size = hidden_states.shape
    _rmsnorm_kernel[(batch_size,)](
        hidden_states, weight, output, hidden_size, hidden_states.stride(0), output.stride(0), 1e-6, BLOCK=2048
    )
"""


def solution(tmp_path: Path, name: str, **spec: object) -> Path:
    content = KERNEL.split("class ModelNew")[0] + DPS_ENTRY
    data = {
        "name": name,
        "definition": "rmsnorm_h4096",
        "author": "someone else",
        "spec": {"language": "triton", "target_hardware": ["cuda"], "entry_point": "main.py::rmsnorm_into", **spec},
        "sources": [{"path": "main.py", "content": content}],
    }
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    return path


def test_a_destination_passing_triton_solution_is_judged_through_a_model_new_that_sizes_its_outputs(
    tmp_path: Path,
) -> None:
    path = solution(tmp_path, "dps", destination_passing_style=True)
    code = kernel_file_code(path, RMSNORM)
    assert "class ModelNew(torch.nn.Module):" in code and "def forward(self, hidden_states, weight):" in code
    assert "batch_size = hidden_states.shape[0]" in code
    assert "output = torch.empty((batch_size, 4096), dtype=torch.bfloat16, device=hidden_states.device)" in code
    # the ModelNew around the entry point is under test, not the sm_90 compile check: the interpreter alone checks
    env = {
        **os.environ,
        "ADAEXPLORE_HOME": str(tmp_path / "home"),
        "ADAEXPLORE_BACKEND": "auto" if ON_GPU else "interpret",
    }
    done = subprocess.run(
        [sys.executable, "-m", "adaexplore", "profile", str(RMSNORM), str(path), "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert json.loads(done.stdout)["status"] == "ok"


def test_a_value_returning_solution_calls_its_entry_point_and_an_exported_candidate_is_taken_as_it_is(
    tmp_path: Path,
) -> None:
    path = solution(tmp_path, "returning", destination_passing_style=False)
    assert "        return rmsnorm_into(hidden_states, weight)" in kernel_file_code(path, RMSNORM)
    data = json.loads(path.read_text())
    data["sources"][0]["content"] = KERNEL  # defines ModelNew itself, as `adaexplore export` leaves it
    path.write_text(json.dumps(data))
    assert kernel_file_code(path, RMSNORM) == KERNEL.rstrip() + "\n"


def test_a_solution_adaexplore_cannot_run_is_refused_with_the_reason(tmp_path: Path) -> None:
    cuda = solution(tmp_path, "cuda_one", language="cuda", entry_point="main.py::rmsnorm_into")
    data = json.loads(cuda.read_text())
    data["sources"][0]["path"] = "main.py"
    cuda.write_text(json.dumps(data))
    with pytest.raises(RequestError, match="written in cuda; adaexplore evaluates Triton kernels"):
        kernel_file_code(cuda, RMSNORM)
    two = solution(tmp_path, "two_files")
    data = json.loads(two.read_text())
    data["sources"].append({"path": "helpers.py", "content": "X = 1\n"})
    two.write_text(json.dumps(data))
    with pytest.raises(RequestError, match="has 2 source files"):
        kernel_file_code(two, RMSNORM)
    other = EXAMPLES / "definitions" / "rmsnorm" / "rmsnorm_h8192.json"
    with pytest.raises(RequestError, match="is for definition rmsnorm_h4096, not rmsnorm_h8192"):
        kernel_file_code(solution(tmp_path, "right"), other)
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"name": "b", "definition": "rmsnorm_h4096", "sources": []}))
    with pytest.raises(RequestError, match=r"solution .*broken\.json does not validate: author: Field required"):
        kernel_file_code(broken, RMSNORM)
    with pytest.raises(RequestError, match="runs only against its definition"):
        kernel_file_code(solution(tmp_path, "x"), ROOT / "examples" / "tasks" / "row_softmax.py")


def test_a_replay_folder_of_solutions_is_matched_to_a_trace_sets_problems_by_the_definition_each_names(
    tmp_path: Path,
) -> None:
    from adaexplore.bench import read_suite, replay_files

    folder = tmp_path / "released" / "rmsnorm"
    folder.mkdir(parents=True)
    found = solution(folder, "someone_v3")
    (folder / "notes.json").write_text('{"not": "a solution"}')
    suite = read_suite(str(EXAMPLES))
    assert suite.kind == "flashinfer" and [p.name for p in suite.problems][1] == "rmsnorm_h4096"
    assert replay_files(tmp_path / "released", suite) == {2: found}
    solution(folder, "someone_v4")
    both = r"someone_v3\.json and someone_v4\.json are both solutions of rmsnorm_h4096"
    with pytest.raises(RequestError, match=both):
        replay_files(tmp_path / "released", suite)
