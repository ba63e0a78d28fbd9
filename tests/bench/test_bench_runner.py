"""The bench runner where the bench, not the kernel, is under test: verdicts come from a scripted evaluator, so
the timed paths (speedups vs eager and torch.compile) and the evaluator's own failures run without a GPU."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from adaexplore import tools
from adaexplore.agent import Explorer
from adaexplore.bench._command import replay_settings
from adaexplore.bench._display import BenchDisplay
from adaexplore.bench._runner import BenchRunner, FileWriter
from adaexplore.bench._suite import Suite, read_suite
from adaexplore.bench._table import bench_summary, render_bench, write_csv
from adaexplore.config import Settings
from adaexplore.executor import Degeneracy, Evaluation, EvaluationOptions, Status, Task, TaskCheck, Timing
from adaexplore.store import open_store
from tests.fakes import FakeEvaluator

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.anyio


class CompileTimingEvaluator(FakeEvaluator):
    """Also answers the torch.compile timing a bench with --compile asks for."""

    def __init__(self) -> None:
        super().__init__(lambda code, _: (Status.infra_error, None) if "BROKEN" in code else (Status.ok, 2.0))
        self.with_compile: list[bool] = []

    async def evaluate(
        self, task: Task, code: str, options: EvaluationOptions | None = None, *, progress: object = None
    ) -> Evaluation:
        with_compile = options is not None and options.with_compile
        self.with_compile.append(with_compile)
        evaluation = await super().evaluate(task, code, options, progress=progress)
        if evaluation.timing is not None and with_compile:
            timing = Timing.model_validate(evaluation.timing.model_dump() | {"speedup_vs_compile": 1.5})
            evaluation = evaluation.model_copy(update={"timing": timing})
        return evaluation


def _suite(tmp_path: Path) -> Path:
    folder = tmp_path / "suite"
    folder.mkdir()
    source = (ROOT / "examples" / "tasks" / "row_softmax.py").read_text()
    for pid in (1, 2, 3):
        (folder / f"{pid}_softmax.py").write_text(source + f"\n# problem {pid}\n")
    return folder


def _bench(store: Any, suite: Suite, mode: str, *, with_compile: bool) -> Any:
    """A replay bench's record over `suite`, as `bench` makes one."""
    return store.create_bench(
        suite=suite.name,
        suite_hash=suite.hash,
        mode=mode,
        backend="auto",
        source="replay",
        options={"steps": None, "with_compile": with_compile, "model": "file", "seed": 1},
        provenance={"gpu": "scripted"},
        problems=[(p.id, p.name, p.file_hash) for p in suite.problems],
    )


async def test_a_problem_the_evaluator_fails_on_is_its_own_row_and_the_timed_numbers_add_up(tmp_path: Path) -> None:
    settings = replay_settings(Settings(home=tmp_path / "home"))
    suite = read_suite(str(_suite(tmp_path)))
    kernels = {1: "x = 1\n", 2: "BROKEN = 1\n", 3: "y = 2\n"}
    evaluator = CompileTimingEvaluator()
    store = open_store(settings.database_url)
    svc = tools.Services(settings, store, evaluator)  # type: ignore[arg-type]
    bench = _bench(store, suite, "strict", with_compile=True)
    stream = io.StringIO()
    display = BenchDisplay(stream, live=False)
    explorer = Explorer(svc, FileWriter(kernels={}, label="file:k"), observer=display, memory_updates=False)
    runner = BenchRunner(svc, explorer, bench, suite, kernels=kernels, observer=display)
    await runner.run()

    rows = store.bench_problems(bench.id)
    assert [r.status for r in rows] == ["ok", "infra_error", "ok"]  # the bench went on past problem 2
    assert "failed in adaexplore's evaluator, through no fault of the kernels" in rows[1].message
    assert rows[0].speedup == 2.0 and rows[0].compile_speedup == 1.5
    assert evaluator.with_compile == [True] * 3  # one evaluation a problem, each timing torch.compile too
    summary = bench_summary(rows)
    assert summary.eager is not None and summary.eager.mean == pytest.approx(4 / 3)
    assert summary.compile is not None and summary.compile.fast[1.2] == pytest.approx(2 / 3)
    text = render_bench(store.bench(bench.id), rows)
    assert "vs torch.compile: mean speedup 1.000x" in text and "Fast@2 0%" in text
    assert "[3/3] 3 3_softmax: ok 2.00x (1.50x vs torch.compile)" in stream.getvalue()
    store.close()


async def test_each_problem_is_checked_in_the_benchs_mode_so_its_first_evaluation_reuses_the_reference(
    tmp_path: Path,
) -> None:
    settings = replay_settings(Settings(home=tmp_path / "home"))  # the settings' mode: strict
    suite = read_suite(str(_suite(tmp_path)))
    evaluator = FakeEvaluator(lambda code, _: (Status.ok, 2.0))
    store = open_store(settings.database_url)
    svc = tools.Services(settings, store, evaluator)  # type: ignore[arg-type]
    bench = _bench(store, suite, "kernelbench", with_compile=False)
    display = BenchDisplay(io.StringIO(), live=False)
    explorer = Explorer(svc, FileWriter(kernels={}, label="file:k"), observer=display, memory_updates=False)
    await BenchRunner(
        svc, explorer, bench, suite, kernels={1: "x = 1\n", 2: "x = 2\n", 3: "x = 3\n"}, observer=display
    ).run()
    assert evaluator.checked_modes == ["kernelbench"] * 3
    store.close()


async def test_a_problem_whose_task_is_degenerate_is_named_and_left_out_of_the_summary(tmp_path: Path) -> None:
    """The task check names problem 2's task degenerate: create_task stores it, its row says it, and the bench's
    numbers leave it out and list it apart."""
    found = Degeneracy(kind="noise", sizes="full")

    class DegenerateTwo(CompileTimingEvaluator):
        async def check_task(self, task: Task, options: EvaluationOptions | None = None) -> TaskCheck:
            await super().check_task(task, options)
            return TaskCheck(degeneracy=found if "PROBLEM = 2" in task.source else None, checked="full")

    settings = replay_settings(Settings(home=tmp_path / "home"))
    folder = _suite(tmp_path)
    for path in folder.iterdir():  # three tasks, not one (a comment leaves a task's id as it is)
        path.write_text(path.read_text() + f"PROBLEM = {path.name.split('_')[0]}\n")
    suite = read_suite(str(folder))
    store = open_store(settings.database_url)
    svc = tools.Services(settings, store, DegenerateTwo())  # type: ignore[arg-type]
    bench = _bench(store, suite, "strict", with_compile=False)
    stream = io.StringIO()
    display = BenchDisplay(stream, live=False)
    explorer = Explorer(svc, FileWriter(kernels={}, label="file:k"), observer=display, memory_updates=False)
    kernels = {1: "x = 1\n", 2: "y = 1\n", 3: "z = 2\n"}
    await BenchRunner(svc, explorer, bench, suite, kernels=kernels, observer=display).run()

    rows = store.bench_problems(bench.id)
    assert [r.degenerate for r in rows] == [None, found.line(), None]
    assert store.task(rows[1].task_id or "").degeneracy == found
    summary = bench_summary(rows)
    assert summary.problems == 2 and summary.degenerate == [rows[1].name]
    text = render_bench(store.bench(bench.id), rows)
    problem_two = next(line for line in text.splitlines() if line.lstrip().startswith("2 "))
    assert "1 degenerate left out" in text and "degenerate" in problem_two
    assert f"{found.line()}" in stream.getvalue()  # the problem's line as it finishes
    csv_text = write_csv(store.bench(bench.id), rows)
    assert found.line() in csv_text and "degenerate_left_out" in csv_text
    store.close()
