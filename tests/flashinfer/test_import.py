"""FlashInfer-Bench definitions in: the example trace set's definitions import as tasks (one input set per workload,
the smallest for the CPU checks, the package's own tolerance), through the package's models in a process of
their own; bad input is named the way the issue asks."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from adaexplore.errors import RequestError
from adaexplore.executor import mode_spec, task_from_source
from adaexplore.executor.tasks._task import model_view
from adaexplore.flashinfer import Imported, import_definition, task_definition
from tests.conftest import ROOT

flashinfer_bench = pytest.importorskip("flashinfer_bench", reason="the flashinfer extra is not installed")

EXAMPLES = ROOT / "examples" / "flashinfer"
DEFINITIONS = sorted((EXAMPLES / "definitions").rglob("*.json"))
GQA = EXAMPLES / "definitions" / "gqa_paged" / "gqa_paged_decode_h32_kv8_d128_ps16.json"


@functools.cache
def imported(definition: Path) -> Imported:
    """One import per example definition for the whole module (each starts a process that imports torch)."""
    return import_definition(definition)


def workloads_of(name: str) -> list[dict]:
    (path,) = (EXAMPLES / "workloads").rglob(f"{name}.jsonl")
    return [json.loads(line)["workload"] for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("definition", DEFINITIONS, ids=lambda p: p.stem)
def test_an_example_definition_imports_as_a_task_with_one_input_set_per_workload(definition: Path) -> None:
    result = imported(definition)
    task = task_from_source(result.source, name=result.name)
    workloads = workloads_of(definition.stem)
    assert result.workloads == len(workloads) == len(task.input_sets or {})
    # each set assigns the workload's var axes; they run smallest first, and the CPU checks take the smallest
    sets = list((task.input_sets or {}).values())
    assert sorted(s["WORKLOAD"] for s in sets) == list(range(len(workloads)))
    by_uuid = {w["uuid"][:8]: w for w in workloads}
    for label, sizes in (task.input_sets or {}).items():
        assert {k: v for k, v in sizes.items() if k != "WORKLOAD"} == by_uuid[label]["axes"]
    assert task.small_sizes == sets[0]
    config = flashinfer_bench.BenchmarkConfig()
    assert task.tolerance == {"atol": config.atol, "rtol": config.rtol}
    assert task_definition(result.source) == {
        "definition": definition.stem,
        "workloads": [by_uuid[label]["uuid"] for label in task.input_sets or {}],
        "flashinfer_bench": metadata.version("flashinfer-bench"),
    }
    assert task.forward_params == list(json.loads(definition.read_text())["inputs"])


def test_a_workloads_safetensors_inputs_travel_in_the_module_and_a_model_is_shown_none_of_their_bytes() -> None:
    task = task_from_source(imported(GQA).source)
    shown = model_view(task.source)
    assert len(task.source) > 50_000 and len(shown) < 12_000
    assert "GIVEN_TENSORS = {...}  #" in shown and "characters of encoded input tensors, not shown" in shown
    assert "def run(q, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len, sm_scale):" in shown


def test_the_flashinfer_modes_numbers_are_the_packages_defaults() -> None:
    config, spec = flashinfer_bench.BenchmarkConfig(), mode_spec("flashinfer")  # type: ignore[arg-type]
    assert spec.trials == config.num_trials
    assert spec.timing.warmup_calls == config.warmup_runs and spec.timing.reps == config.iterations
    assert spec.reference_precision == "native" and spec.cast_floats_to is None


def copy_examples(tmp_path: Path) -> Path:
    root = tmp_path / "set"
    shutil.copytree(EXAMPLES, root)
    return root


def test_a_definition_that_does_not_validate_gets_the_packages_message_with_the_field_path(tmp_path: Path) -> None:
    root = copy_examples(tmp_path)
    path = root / "definitions" / "rmsnorm" / "rmsnorm_h4096.json"
    data = json.loads(path.read_text())
    data["reference"] = "def forward(x):\n    return x\n"
    data["inputs"]["weight"]["dtype"] = "float128"
    path.write_text(json.dumps(data))
    with pytest.raises(RequestError) as caught:
        import_definition(path)
    message = str(caught.value)
    assert message.startswith(f"definition {path} does not validate: ")
    assert "inputs.weight.dtype: Input should be 'float32'" in message
    assert "errors.pydantic.dev" not in message
    data["inputs"]["weight"]["dtype"] = "bfloat16"
    path.write_text(json.dumps(data))
    with pytest.raises(RequestError, match="Reference must define a top-level function named 'run'"):
        import_definition(path)
    path.write_text("{not json")
    with pytest.raises(RequestError, match=r"is not JSON"):
        import_definition(path)
    with pytest.raises(RequestError, match=r"definition .*nothing\.json does not exist"):
        import_definition(root / "nothing.json")


def test_a_workload_whose_axes_do_not_match_is_named(tmp_path: Path) -> None:
    root = copy_examples(tmp_path)
    workload = {
        "axes": {"batch_size": 4, "seq_len": 9},
        "inputs": {"hidden_states": {"type": "random"}, "weight": {"type": "random"}},
        "uuid": "odd-one",
    }
    file = tmp_path / "odd.json"
    file.write_text(json.dumps(workload))
    with pytest.raises(RequestError) as caught:
        import_definition(root / "definitions" / "rmsnorm" / "rmsnorm_h4096.json", [file])
    assert "workload odd-one does not match definition rmsnorm_h4096" in str(caught.value)
    assert "seq_len" in str(caught.value) and "['batch_size']" in str(caught.value)
    with pytest.raises(RequestError, match="no workload of definition rmsnorm_h4096"):
        import_definition(root / "definitions" / "rmsnorm" / "rmsnorm_h4096.json", [root / "workloads" / "gqa_paged"])


def test_a_missing_safetensors_file_is_named_with_where_it_was_looked_for(tmp_path: Path) -> None:
    root = copy_examples(tmp_path)
    blobs = sorted((root / "blob" / "workloads" / "gqa_paged").glob("*.safetensors"))
    blobs[0].unlink()
    with pytest.raises(RequestError) as caught:
        import_definition(root / "definitions" / "gqa_paged" / GQA.name)
    message = str(caught.value)
    assert f"comes from the safetensors file blob/workloads/gqa_paged/{blobs[0].name}, which does not exist" in message
    assert f"relative to its trace set's root, {root.resolve()}" in message


def test_without_the_extra_the_converter_says_which_extra_to_install() -> None:
    block = (
        "import importlib.abc, sys\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'flashinfer_bench':\n"
        "            raise ImportError('No module named flashinfer_bench')\n"
        "sys.meta_path.insert(0, Block())\n"
        "from adaexplore.flashinfer._convert import main\n"
        "main()\n"
    )
    request = json.dumps({"op": "import", "definition": str(GQA), "workloads": None})
    done = subprocess.run([sys.executable, "-c", block], input=request, capture_output=True, text=True, cwd=ROOT)
    answer = json.loads(done.stdout)
    assert answer["ok"] is False and answer["missing"] is True
    assert "pip install 'adaexplore[flashinfer]'" in answer["error"]
