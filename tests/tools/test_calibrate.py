"""`adaexplore calibrate`: a store's GPU verdicts refit the estimate per GPU model; the calibration is stored there
(on SQLite and PostgreSQL alike), every later estimate for that GPU model uses and names it, one for another model
does not, and the brief, `doctor` and the command line say which is in force."""

from __future__ import annotations

from pathlib import Path

import pytest

from adaexplore.cli import main
from adaexplore.config import Settings
from adaexplore.executor import Evaluation, EvaluationOptions, Mode, Status, Task, calibration_for, load_task
from adaexplore.executor.pipeline.stages.speed import estimate_for
from adaexplore.roofline import CALIBRATION, MIN_KERNELS, TaskWork, estimate_forward, gpu_spec
from adaexplore.store import open_store
from adaexplore.tools import (
    CompileAndProfileRequest,
    CreateTaskRequest,
    Services,
    StartRunRequest,
    calibrate,
    compile_and_profile,
    create_task,
    start_run,
)
from adaexplore.tools._speed import calibration_sentence
from tests.conftest import Databases
from tests.fakes import FakeEvaluator, by_hash
from tests.synthetic_verdicts import TRUE, corpus, store_verdicts

DATA = Path(__file__).parents[1] / "executor" / "data"
TASK: Task = load_task(DATA / "long_linear_task.py")


def _estimate(kernel_index: int, gpu: str, svc: Services) -> tuple[float, str | None, str]:
    kernel = corpus(MIN_KERNELS + 4, problems=4)[kernel_index]
    reference = TaskWork(forward=kernel.reference, input_bytes=1.0, parameter_bytes=0.0, output_bytes=1.0)
    estimate, why = estimate_for(
        TASK, Mode.strict, Status.ok, reference, kernel.kernel, None, gpu_spec(gpu), None,
        calibrations=svc.store.calibrations(),
    )  # fmt: skip
    assert estimate is not None, why
    return estimate.ms, estimate.calibration, estimate.summary


def test_a_calibration_is_fitted_stored_and_used_for_its_gpu_alone(databases: Databases, tmp_path: Path) -> None:
    settings = databases.settings(tmp_path)
    store = open_store(settings.database_url)
    svc = Services(settings=settings, store=store, evaluator=FakeEvaluator(by_hash))
    try:
        store_verdicts(store, corpus(MIN_KERNELS + 4, problems=4))
        store_verdicts(store, corpus(3, problems=1, seed=9), device="NVIDIA H100 80GB HBM3")
        assert calibration_sentence(svc, "H200").startswith("The estimate uses adaexplore's own efficiencies")
        before_ms, named, _ = _estimate(0, "H200", svc)
        assert named is None

        report = calibrate(svc)
        h100, h200 = report.outcomes
        assert h100.gpu == "H100" and h100.calibration is None
        assert (
            f"3 correct H100 kernel(s) with what they launch recorded; a calibration needs at least {MIN_KERNELS}"
            in (h100.refused)
        )
        fitted = h200.calibration
        assert fitted is not None and not h200.refused and fitted.id is not None and report.stored
        assert fitted.kernels == MIN_KERNELS + 4 and fitted.problems == 4 and fitted.held_out == "leave one problem out"
        assert fitted.error_after < fitted.error_before
        for group in ("tensor_cores", "cuda_cores", "memory"):
            assert fitted.factors[group] == pytest.approx(TRUE[group], rel=0.15), fitted.factors
        assert [c.gpu for c in store.calibrations()] == ["H200"]

        # every later H200 estimate uses it and names it; an H100 estimate keeps the package's efficiencies
        after_ms, named, summary = _estimate(0, "H200", svc)
        assert named == fitted.label() and f"on an H200 by {fitted.label()}, not measured" in summary
        assert after_ms != pytest.approx(before_ms, rel=0.01)
        kernel = corpus(MIN_KERNELS + 4, problems=4)[0].kernel
        assert after_ms == pytest.approx(estimate_forward(kernel, gpu_spec("H200"), calibration=fitted.applied()).ms)
        h100_ms, named, _ = _estimate(0, "H100", svc)
        assert named is None
        assert h100_ms == pytest.approx(estimate_forward(kernel, gpu_spec("H100"), calibration=CALIBRATION).ms)
        assert calibration_sentence(svc, "H200") == (
            f"The estimate uses {fitted.label()}, fitted to this store's verdicts of that GPU."
        )
    finally:
        store.close()


@pytest.mark.anyio
async def test_a_timed_kernels_forward_is_kept_beside_its_verdict_not_in_it(tmp_path: Path) -> None:
    class Timed(FakeEvaluator):
        async def evaluate(
            self, task: Task, code: str, options: EvaluationOptions | None = None, *, progress: object = None
        ) -> Evaluation:
            self.options = options
            verdict = await super().evaluate(task, code, options, progress=progress)
            return verdict.model_copy(update={"forward_work": '{"steps": [], "complete": true, "note": ""}'})

    settings = Settings(home=tmp_path)
    evaluator = Timed(lambda code, n: (Status.ok, 1.5))
    svc = Services(settings=settings, store=open_store(settings.database_url), evaluator=evaluator)
    store_verdicts(svc.store, corpus(MIN_KERNELS, problems=2))
    calibrate(svc)
    task = create_task(svc, CreateTaskRequest(path=str(DATA / "scale_relu_task.py")))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=1, model="tester"))
    # the run's brief says which efficiencies rank its kernels
    assert "The estimate uses calibration 1 (H200, " in run.brief and "fitted to this store's verdicts" in run.brief
    step = await compile_and_profile(
        svc, CompileAndProfileRequest(run_id=run.run_id, parent_id=run.root_node_id, action="large", code="x = 1")
    )
    # the evaluator was handed the store's calibrations, for an estimate of their GPU
    assert evaluator.options is not None and [c.gpu for c in evaluator.options.calibrations] == ["H200"]
    assert step.evaluation is not None and step.evaluation.forward_work is None
    assert step.node_id is not None
    stored = svc.store.evaluation(svc.store.node(step.node_id).evaluation_id or 0)
    assert stored.work == '{"steps": [], "complete": true, "note": ""}' and '"forward_work":null' in stored.result
    svc.store.close()


def _cli(*args: str, home: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`adaexplore calibrate ARGS` through the command line's own entry point: its exit code, output, errors."""
    with pytest.raises(SystemExit) as exited:
        main(["calibrate", "--home", str(home), *args])
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def test_the_command_refuses_too_few_kernels_reports_a_dry_run_and_stores_a_fit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from adaexplore.cli._doctor import _estimate as doctor_line

    code, _, err = _cli(home=tmp_path / "none", capsys=capsys)
    assert code == 2 and "there is no database at" in err and not (tmp_path / "none").exists()
    settings = Settings(home=tmp_path)
    store = open_store(settings.database_url)
    store_verdicts(store, corpus(MIN_KERNELS - 1, problems=3))
    store.close()
    code, out, err = _cli(home=tmp_path, capsys=capsys)
    assert code == 2, err
    assert f"H200: not calibrated: {MIN_KERNELS - 1} correct H200 kernel(s)" in out
    assert f"needs at least {MIN_KERNELS}" in out and "no GPU model was calibrated" in err

    store = open_store(settings.database_url)
    store_verdicts(store, corpus(5, problems=2, seed=5))
    store.close()
    code, out, err = _cli("--dry-run", "--gpu", "h200", home=tmp_path, capsys=capsys)
    assert code == 0, err
    assert f"H200: {MIN_KERNELS + 4} kernels of 3 problems" in out
    assert "held out (leave one problem out): median |log(estimate/measured)| of kernel times" in out
    assert "not stored (--dry-run)" in out
    assert "store holds no calibration" in doctor_line(settings).found

    code, out, err = _cli(home=tmp_path, capsys=capsys)
    assert code == 0, err
    assert "stored as calibration 1 (H200, " in out and "every later H200 estimate uses it" in out
    line = doctor_line(settings)
    assert line.found.startswith("calibration 1 (H200, ") and "in force for H200 estimates" in line.found
    assert line.todo is None
    # one fitted against another version's efficiencies is named, not used, and doctor asks for a new fit
    store = open_store(settings.database_url)
    stale = store.put_calibration(store.calibrations()[0].model_copy(update={"gpu": "H100", "base": "0" * 12}))
    assert calibration_for(gpu_spec("H100"), store.calibrations()) is None
    store.close()
    line = doctor_line(settings)
    assert f"{stale.label()} fitted to another version's estimate, not used" in line.found
    assert line.todo == "run `adaexplore calibrate --gpu H100` again"
