"""The report in a real browser: headless Chromium, driven by Playwright, opens the reports of a real replay
run made by the CLI (no GPU, no network), of a bench over it with set speedups (to sort), and of a real replay
bench over the examples made by the CLI, and is used as a person would."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from adaexplore.cli._report import add_report_parser, run_report
from adaexplore.config import Settings
from adaexplore.store import ProblemVerdict, open_store
from tests.conftest import EXAMPLES, ROOT

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (it comes with `./install.sh --dev`)"
)
CHROMIUM = os.environ.get("ADAEXPLORE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
if not Path(CHROMIUM).exists():
    pytest.skip(
        f"no Chromium at {CHROMIUM}: `./install.sh --dev` installs Debian's chromium (or `apt-get install chromium`; "
        "ADAEXPLORE_CHROMIUM names another binary)",
        allow_module_level=True,
    )
# Without the background-networking switches Chromium reaches out to its vendor's services at start.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
ARTIFACTS = Path(os.environ.get("ADAEXPLORE_TEST_ARTIFACTS") or ROOT / "test-artifacts")


def adaexplore(home: Path, *args: str) -> None:
    """The command line in a process of its own, on `home`, with no model key: it must succeed."""
    done = subprocess.run(
        [sys.executable, "-m", "adaexplore", "--home", str(home), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ADAEXPLORE_HOME", "ADAEXPLORE_DB")},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]


def report(home: Path, item_id: str, target: Path) -> Path:
    parser = argparse.ArgumentParser(prog="adaexplore")
    add_report_parser(parser.add_subparsers(dest="command", required=True))
    run_report(parser.parse_args(["report", item_id, "--html", str(target)]), Settings(home=home))
    return target


@pytest.fixture(scope="module")
def replay(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A three-step replay run of the row_softmax example through the real CLI, its nodes, and its reports."""
    home = tmp_path_factory.mktemp("report-home")
    task = EXAMPLES / "tasks" / "row_softmax.py"
    # the report is under test, not the sm_90 compile check (the bench below has it): the interpreter alone checks
    config = home / "settings.toml"
    config.write_text('[executor]\nbackend = "interpret"\n')
    adaexplore(home, "--config", str(config), "explore", str(task), "--steps", "3", "--seed", "3")
    store = open_store(Settings(home=home).database_url)
    try:
        (run,) = store.runs()
        nodes = store.nodes(run.id)
        bench = store.create_bench(
            suite="examples",
            suite_hash="h",
            mode=run.mode,
            backend=run.backend,
            source="search",
            options={"steps": 3},
            provenance={"torch": "cpu"},
            problems=[(1, "row_softmax", "a"), (2, "layernorm", "b"), (3, "mlp", "c")],
        )
        store.start_bench_problem(bench.id, 1, task_id=run.task_id, run_id=run.id)
        for problem, speedup in ((1, 1.5), (2, 3.0), (3, 0.5)):
            store.finish_bench_problem(bench.id, problem, ProblemVerdict(status="ok", message="", speedup=speedup))
    finally:
        store.close()
    return {
        "run": run,
        "nodes": nodes,
        "bench_id": bench.id,
        "run_page": report(home, run.id, home / "run.html"),
        "bench_page": report(home, bench.id, home / "bench.html"),
    }


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def open_page(browser, page_file: Path):  # type: ignore[no-untyped-def]
    """The page opened from its file, with every request it made and every error it raised."""
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.goto(page_file.as_uri(), wait_until="load")
    return page, requests, errors


def test_the_run_report_shows_the_tree_the_code_of_a_clicked_node_and_the_plot(replay: dict, browser) -> None:  # type: ignore[no-untyped-def]
    page, requests, errors = open_page(browser, replay["run_page"])
    try:
        nodes = replay["nodes"]
        assert page.locator("svg.tree [data-node-id]").count() == len(nodes) == 4
        failed = next(n for n in nodes if n.parent_id is not None and n.status != "ok")
        page.click(f'svg.tree [data-node-id="{failed.id}"]')
        details = page.locator(".details")
        assert details.locator(".node-title").inner_text().startswith(f"Node {failed.id}: small step")
        assert details.locator("pre.code").inner_text().strip() == failed.code.strip()
        assert details.locator(".badge").inner_text() == failed.status
        assert details.locator("pre.diff .add").count() >= 1
        assert page.locator(f'svg.tree [data-node-id="{failed.id}"]').get_attribute("class").endswith("selected")
        assert page.evaluate("location.hash") == f"#{replay['run'].id}/node-{failed.id}"
        plot = page.locator("#progress-plot")
        assert plot.is_visible() and plot.bounding_box()["width"] > 300
        assert plot.locator("path.series").count() == 1 and plot.locator("path.series").get_attribute("d")
        timed = any(n.speedup is not None for n in nodes)
        assert plot.get_attribute("data-timed") == ("yes" if timed else "no")
        if not timed:  # no GPU here: the page says so rather than drawing a speedup curve
            assert "speedups were not measured" in page.locator(".plot figcaption").inner_text()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "report-run.png"), full_page=True)
        assert errors == []
        assert requests == [replay["run_page"].as_uri()]  # the file itself, and nothing else
    finally:
        page.close()


def test_the_bench_report_sorts_its_table_and_opens_a_problems_tree(replay: dict, browser) -> None:  # type: ignore[no-untyped-def]
    page, requests, errors = open_page(browser, replay["bench_page"])
    try:

        def names() -> list[str]:
            return page.locator("#problems tbody tr td:nth-child(2)").all_inner_texts()

        assert names() == ["row_softmax", "layernorm", "mlp"]
        page.click("#problems th:nth-child(4)")  # vs eager, ascending
        assert names() == ["mlp", "row_softmax", "layernorm"]
        page.click("#problems th:nth-child(4)")
        assert names() == ["layernorm", "row_softmax", "mlp"]
        assert page.locator("#distribution-plot rect.bar").count() == 9  # torch.compile was not timed: eager only
        run_id = replay["run"].id
        tree = page.locator(f'svg.tree[data-run-id="{run_id}"]')
        assert not tree.is_visible()
        page.click(f'#problems a[href="#{run_id}"] >> nth=0')
        assert tree.is_visible()
        assert tree.locator("[data-node-id]").count() == len(replay["nodes"])
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "report-bench.png"), full_page=True)
        assert errors == []
        assert requests == [replay["bench_page"].as_uri()]
    finally:
        page.close()


@pytest.fixture(scope="module")
def replay_bench(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """`adaexplore bench examples --replay DIR` through the real CLI over two example problems, one correct kernel
    and one that does not compile, and its report."""
    home = tmp_path_factory.mktemp("bench-home")
    kernels = home / "kernels"
    kernels.mkdir()
    (kernels / "7.py").write_text((EXAMPLES / "kernels" / "row_softmax" / "correct.py").read_text())
    (kernels / "4.py").write_text((EXAMPLES / "kernels" / "layernorm" / "compile_error.py").read_text())
    adaexplore(home, "bench", "examples", "--ids", "4,7", "--replay", str(kernels), "--seed", "1")
    store = open_store(Settings(home=home).database_url)
    try:
        (bench,) = store.benches()
        problems = store.bench_problems(bench.id)
    finally:
        store.close()
    return {"bench": bench, "problems": problems, "page": report(home, bench.id, home / "replay-bench.html")}


def test_the_report_of_a_real_replay_bench_over_the_examples(replay_bench: dict, browser) -> None:  # type: ignore[no-untyped-def]
    page, requests, errors = open_page(browser, replay_bench["page"])
    try:
        rows = page.locator("#problems tbody tr")
        assert rows.count() == 2
        statuses = {p.problem_id: p.status for p in replay_bench["problems"]}
        assert statuses == {4: "compile_error", 7: "ok"}
        table = page.locator("#problems").inner_text()
        assert "layernorm" in table and "row_softmax" in table and "compile_error" in table
        facts = page.locator("dl.facts").first.inner_text()
        assert "replay" in facts and "None" not in facts  # an option the bench did not take is left out
        correct = next(p for p in replay_bench["problems"] if p.problem_id == 7)
        tree = page.locator(f'svg.tree[data-run-id="{correct.run_id}"]')
        page.click(f'#problems a[href="#{correct.run_id}"] >> nth=0')
        assert tree.is_visible()
        assert tree.locator("[data-node-id]").count() == 2  # the root and the replayed kernel, a run of one step
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "report-replay-bench.png"), full_page=True)
        assert errors == []
        assert requests == [replay_bench["page"].as_uri()]
    finally:
        page.close()
