"""The corpus of GPU truth (`benchmarks/gpu_truth/`) is what its generator writes: every generated kernel file holds
the text its template gives today (a template edited without regenerating, or a generated file edited by hand,
fails here), each says its family and parameters on its first line, and every kernel of the corpus, generated or
hand-written, opens with a line that says its design; `measure.py --list` finds Level 3's KernelBench problems and
counts as measured only the rows of truth.jsonl whose code is the file's today. No compile, no GPU: a second or
two."""

from __future__ import annotations

import json
import sys

import anyio
import pytest

from tests.conftest import ROOT

CORPUS = ROOT / "benchmarks" / "gpu_truth"
sys.path.insert(0, str(CORPUS))
import generate  # noqa: E402  (the generator's modules import each other by their plain names)
import measure  # noqa: E402

KERNELBENCH = ROOT.parent / "shared" / "data" / "kernelbench"


def test_every_generated_kernel_is_what_its_template_writes() -> None:
    generated = generate.everything()
    assert len(generated) >= 180
    stale = [rel for rel, text in generated if (CORPUS / rel).read_text() != text]
    assert not stale, f"regenerate with `python benchmarks/gpu_truth/generate.py`: {stale[:5]}"


def test_generated_kernels_name_their_family_and_parameters_on_their_first_line() -> None:
    for rel, text in generate.everything():
        first = text.splitlines()[0]
        assert first.startswith("# ") and "[family=" in first and first.endswith("]"), rel
        assert "class ModelNew(nn.Module)" in text, rel


def test_every_kernel_of_the_corpus_says_its_design_first() -> None:
    kernels = sorted(CORPUS.glob("level[123]/*/*.py"))
    assert len(kernels) >= 300
    for path in kernels:
        first = path.read_text().splitlines()[0]
        assert first.startswith("# ") and len(first) > 20, path
        assert path.parent.name.isdigit(), path


@pytest.mark.skipif(not KERNELBENCH.is_dir(), reason=f"KernelBench's problems are not at {KERNELBENCH}")
def test_measure_lists_level3_and_resumes_only_from_rows_of_the_same_code(tmp_path, capsys) -> None:
    kernels = sorted(CORPUS.glob("level3/*/*.py"))  # Level 3 alone: a code hash per file is what costs here
    one = CORPUS / "level3" / "43" / "flash_tf32x3_64x64_w4_s2.py"
    out = tmp_path / "truth.jsonl"
    rows = [
        {"kernel": str(one.relative_to(CORPUS)), "code_hash": measure.code_hash(one.read_text())},
        {"kernel": "level3/4/direct_fcchain.py", "code_hash": "edited-since"},  # stale: measured again
    ]
    out.write_text("".join(json.dumps(row) + "\n" for row in rows))
    anyio.run(measure.main, "level3/", out, KERNELBENCH, 1, None, "strict", None, True)
    lines = capsys.readouterr().out.splitlines()
    problems = len({k.parent for k in kernels})
    assert lines[:3] == [
        "level 1: 0 kernels of 0 problems, 0 not yet measured",
        "level 2: 0 kernels of 0 problems, 0 not yet measured",
        f"level 3: {len(kernels)} kernels of {problems} problems, {len(kernels) - 1} not yet measured",
    ]
    assert lines[3] == f"{len(kernels) - 1} kernels to measure; results go to {out}"


def test_a_run_cut_short_has_measured_every_problems_first_kernels() -> None:
    a, b = ROOT / "a.py", ROOT / "b.py"
    todo = [(2, a, f"a{i}", None) for i in range(3)] + [(2, b, f"b{i}", None) for i in range(2)]
    assert [item[2] for item in measure.broad_first(todo, 2)] == ["a0", "a1", "b0", "b1", "a2"]
    assert measure.broad_first(todo, 0) == todo


def test_the_estimate_records_are_keyed_by_sources_that_exist() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import estimate_corpus

    missing = [path for path in estimate_corpus.RECORDER if not (ROOT / path).is_file()]
    assert not missing, f"estimate_corpus.RECORDER names files that are gone: {missing}"


@pytest.mark.slow  # a compile for sm_90 at full size
def test_the_estimate_corpus_records_a_kernel_at_full_size() -> None:
    import subprocess

    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "estimate_corpus.py"),
            "record-one",
            str(ROOT / "examples" / "tasks" / "gemm_epilogue.py"),
            str(ROOT / "examples" / "kernels" / "gemm_epilogue" / "correct.py"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads(done.stdout.strip().splitlines()[-1])
    [launch] = [step for step in record["kernel"]["steps"] if step["kind"] == "launch"]
    [config] = launch["configs"]
    assert launch["kernel"] == "_linear_scale_leaky_kernel" and config["programs"] > 0
    # an fp32 dot of x @ w.T: the weight's tile is read along K, as the compiled code's load layout says
    assert set(config["dot_flops"]) == {"ieee"} and config["b_k_major"] is True
    assert record["kernel"]["complete"] and record["task"] is not None


def test_the_estimate_corpus_fits_fields_the_calibration_has() -> None:
    import dataclasses

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import estimate_corpus

    from adaexplore.roofline import CALIBRATION

    fields = {f.name for f in dataclasses.fields(CALIBRATION)}
    assert set(estimate_corpus.FITTED) <= fields, set(estimate_corpus.FITTED) - fields
    assert estimate_corpus.FRACTIONS <= set(estimate_corpus.FITTED)


def test_the_estimate_corpus_scores_each_gpus_rows_on_that_gpu_and_fits_another_gpus_by_ratios_alone(
    tmp_path,
) -> None:
    import math

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import estimate_corpus

    from adaexplore.roofline import CALIBRATION, ForwardWork, LaunchConfig, LaunchWork, OpWork, TaskWork

    def launch(flops: float) -> dict:  # memory-bound: the H100's HBM is slower, its tensor cores are not
        config = LaunchConfig(
            config="c", programs=512, num_warps=8, num_stages=4, dot_flops={"tf32x3": flops}, bytes_read=flops / 20
        )
        return ForwardWork(steps=[LaunchWork(kernel="k", configs=[config])]).model_dump(mode="json")

    reference = OpWork(op="aten.mm", category="matmul", flops=1.4e11, bytes_read=3e8)
    task = TaskWork(forward=ForwardWork(steps=[reference]), input_bytes=0, parameter_bytes=0, output_bytes=0)
    h100 = "NVIDIA H100 80GB HBM3"
    timed = [(None, "a", 1.4e11, 1.8), (None, "a", 2.8e11, 3.5), (h100, "b", 1.4e11, 2.0), (h100, "b", 2.8e11, 4.2)]
    records, rows = {}, []
    for i, (gpu, problem, flops, ms) in enumerate(timed):
        kernel, task_file = tmp_path / f"k{i}.py", tmp_path / f"t{problem}.py"
        kernel.write_text(f"# kernel {i}\n")
        task_file.write_text(f"# task {problem}\n")
        row = {"problem": problem, "kernel": kernel.name, "kernel_ms": ms, "eager_ms": 2.7, "strict_speedup": 2.7 / ms}
        row |= {"task_path": str(task_file), "kernel_path": str(kernel)}
        row |= {"gpu": gpu, "status": "ok"} if gpu else {"h200_status": "ok"}
        rows.append(row)
        records[estimate_corpus._digest(str(task_file), str(kernel))] = {
            "kernel": launch(flops),
            "task": task.model_dump(mode="json"),
        }
    assert [estimate_corpus.gpu_of(r) for r in rows] == ["H200", "H200", "H100", "H100"]
    assert all(estimate_corpus.status(r) == "ok" for r in rows)
    # each row is estimated on the peaks of the GPU that timed it
    est = {r["kernel"]: r["est_ms"] for r in estimate_corpus.estimates(rows, records, CALIBRATION)}
    assert est["k2.py"] > 1.3 * est["k0.py"]  # the same launch, on an H100's memory and on an H200's
    # another GPU's rows count in the fit by how its kernels of one problem compare, not by their absolute times
    home, other = rows[:2], rows[2:]
    slower = [{**r, "kernel_ms": r["kernel_ms"] * 3} for r in other]
    alone = estimate_corpus.loss(home, records, CALIBRATION)
    with_other = estimate_corpus.loss(home, records, CALIBRATION, other)
    assert with_other != alone
    assert math.isclose(with_other, estimate_corpus.loss(home, records, CALIBRATION, slower))
    # held out: a problem's rows are estimated by a fit that did not read them
    assert {r["kernel"] for r in estimate_corpus.held_out(other, home, records, CALIBRATION)} == {"k2.py", "k3.py"}
