"""Report pages from a real store: the data of a run and of a bench, the HTML made of it, and `report`."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest

from adaexplore.bench import ProblemScore, summarize
from adaexplore.bench._report_data import bench_page_data, run_page_data
from adaexplore.bench._report_html import render_bench_html, render_run_html
from adaexplore.cli._report import add_report_parser, run_report
from adaexplore.config import SearchConfig, Settings
from adaexplore.domain import Degeneracy, Kind
from adaexplore.errors import NotFoundError, RequestError
from adaexplore.executor import AuditFlag, Status, code_hash, task_from_source
from adaexplore.search import reward
from adaexplore.store import NewEvaluation, ProblemVerdict, Store, open_store
from tests.conftest import EXAMPLES, Databases
from tests.fakes import make_evaluation, services_over

TASK = (EXAMPLES / "tasks" / "row_softmax.py").read_text()
KERNEL = (EXAMPLES / "kernels" / "row_softmax" / "correct.py").read_text()
# A comment that would end the page's <script> elements if the code were put in unescaped.
HOSTILE = KERNEL.replace("import torch\n", "import torch\n# </script><script>alert('x')</script> <!-- &amp;\n", 1)
TUNED = KERNEL.replace("row = tl.program_id(0)", "row = tl.program_id(axis=0)", 1)
assert HOSTILE != KERNEL and TUNED != KERNEL


class Elements(HTMLParser):
    """Every start tag of a page with its attributes, and the text of its <script> elements."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.scripts: list[tuple[dict[str, str], str]] = []
        self._in_script: dict[str, str] | None = None
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        self.tags.append((tag, values))
        if tag == "script":
            self._in_script = values

    def handle_data(self, data: str) -> None:
        if self._in_script is not None:
            self.scripts.append((self._in_script, data))

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = None

    def with_attr(self, name: str) -> list[dict[str, str]]:
        return [attrs for _, attrs in self.tags if name in attrs]

    def data(self) -> dict:
        return json.loads(next(text for attrs, text in self.scripts if attrs.get("id") == "report-data"))


def add(
    store: Store,
    run_id: str,
    parent: int,
    kind: Kind,
    code: str,
    status: Status,
    speedup: float | None,
    flags: list[AuditFlag] | None = None,
) -> int:
    task = task_from_source(TASK)
    evaluation = make_evaluation(task, code, status, speedup)
    evaluation.audit.flags.extend(flags or [])
    node = store.add_child(
        run_id,
        parent,
        kind,
        code=code,
        code_hash=code_hash(code),
        context_ids=[],
        task_id=task.hash,
        evaluation=NewEvaluation(
            code_hash=code_hash(code),
            environment="test",
            mode="strict",
            status=status.value,
            speedup=speedup,
            result=evaluation.model_dump_json(),
        ),
        reward=reward(status.value, speedup),
    )
    return node.id


def make_run(store: Store, *, timed: bool = True) -> tuple[str, dict[str, int]]:
    """root → a (large, ok) → b (small, mismatch, hostile code), c (small, ok, the best); root → d (large)."""
    task = task_from_source(TASK)
    store.put_task(task.hash, "row_softmax", TASK, "test")
    config = SearchConfig(total_steps=4).model_dump_json()
    run = store.create_run(task.hash, config=config, mode="strict", backend="cuda", model="t", seed=1)
    ids = {"root": run.root_id}
    ids["a"] = add(store, run.id, run.root_id, Kind.large, KERNEL, Status.ok, 1.5 if timed else None)
    ids["b"] = add(store, run.id, ids["a"], Kind.small, HOSTILE, Status.mismatch, None)
    flag = AuditFlag(code="low_triton_share", severity="warn", message="most GPU time is outside Triton")
    ids["c"] = add(store, run.id, ids["a"], Kind.small, TUNED, Status.ok, 2.5 if timed else None, [flag])
    ids["d"] = add(store, run.id, run.root_id, Kind.large, KERNEL, Status.compile_error, None)
    return run.id, ids


@pytest.fixture
def store(databases: Databases, tmp_path: Path) -> Iterator[Store]:
    opened = open_store(databases(tmp_path))
    yield opened
    opened.close()


def test_the_tree_has_one_element_per_node_and_marks_the_path_to_the_best(store: Store) -> None:
    run_id, ids = make_run(store)
    page = Elements(render_run_html(run_page_data(services_over(store), run_id)))
    drawn = {int(a["data-node-id"]): a["class"].split() for a in page.with_attr("data-node-id")}
    assert sorted(drawn) == sorted(ids.values())
    on_path = {node for node, classes in drawn.items() if "on-path" in classes}
    assert on_path == {ids["root"], ids["a"], ids["c"]}
    assert [node for node, classes in drawn.items() if "best" in classes] == [ids["c"]]
    assert "s-mismatch" in drawn[ids["b"]] and "k-small" in drawn[ids["b"]]
    edges = [a["class"].split() for tag, a in page.tags if tag == "line" and "edge" in a.get("class", "")]
    assert len(edges) == len(ids) - 1 + 3  # the tree's edges and the legend's three
    assert sum("on-path" in e and "k-small" in e for e in edges) == 1  # a → c
    assert sum("k-small" in e and "on-path" not in e for e in edges) == 2  # a → b, and the legend's


def test_code_is_escaped_and_comes_back_whole_from_the_embedded_data(store: Store) -> None:
    run_id, ids = make_run(store)
    html = render_run_html(run_page_data(services_over(store), run_id))
    assert html.count("</script>") == 2  # the data's and the behaviour's, none from the code
    assert "alert(" not in html.split('id="report-data"')[0]
    page = Elements(html)
    assert len(page.scripts) == 2
    nodes = {n["id"]: n for n in page.data()["run"]["nodes"]}
    assert nodes[ids["b"]]["code"] == HOSTILE
    assert nodes[ids["c"]]["verdict"]["flags"] == [
        {"code": "low_triton_share", "severity": "warn", "message": "most GPU time is outside Triton"}
    ]


def test_each_node_carries_its_diff_and_verdict(store: Store) -> None:
    run_id, ids = make_run(store)
    run = run_page_data(services_over(store), run_id)["run"]
    nodes = {n["id"]: n for n in run["nodes"]}
    assert nodes[ids["a"]]["diff"] is None  # its parent, the root, has no code
    diff = nodes[ids["c"]]["diff"].splitlines()
    assert "-    row = tl.program_id(0)" in diff and "+    row = tl.program_id(axis=0)" in diff
    assert nodes[ids["b"]]["verdict"]["status"] == "mismatch"
    assert run["counts"] == {"ok": 2, "compile_error": 1, "mismatch": 1}
    assert run["best_node_id"] == ids["c"] and run["best_path"] == [ids["root"], ids["a"], ids["c"]]
    assert [p["best_speedup"] for p in run["progress"]] == [1.5, 1.5, 2.5, 2.5]


def test_a_run_without_timing_says_so_instead_of_drawing_a_speedup_curve(store: Store) -> None:
    timed_id, _ = make_run(store)
    untimed_id, _ = make_run(store, timed=False)
    timed = Elements(render_run_html(run_page_data(services_over(store), timed_id)))
    untimed_html = render_run_html(run_page_data(services_over(store), untimed_id))
    untimed = Elements(untimed_html)
    for page, flag in ((timed, "yes"), (untimed, "no")):
        (plot,) = [a for tag, a in page.tags if a.get("id") == "progress-plot"]
        assert plot["data-timed"] == flag
        assert any(tag == "path" and a.get("class") == "series" and a["d"] for tag, a in page.tags)
    assert "speedups were not measured" in plot["aria-label"]
    assert "Speedups were not measured for this run" in untimed_html
    assert [p["correct"] for p in untimed.data()["run"]["progress"]] == [1, 1, 2, 2]


def test_only_a_served_page_of_a_running_run_reloads_itself(store: Store) -> None:
    run_id, _ = make_run(store)
    data = run_page_data(services_over(store), run_id)
    refresh = '<meta http-equiv="refresh" content="5">'
    assert refresh in render_run_html(data, refresh_every=5)
    assert refresh not in render_run_html(data)
    store.finish_run(run_id, None, "[]")
    assert refresh not in render_run_html(run_page_data(services_over(store), run_id), refresh_every=5)


def test_unknown_ids_name_the_list_commands(store: Store) -> None:
    with pytest.raises(NotFoundError, match="adaexplore runs list"):
        run_page_data(services_over(store), "run-00000000")
    with pytest.raises(NotFoundError, match="adaexplore bench list"):
        bench_page_data(services_over(store), "bench-00000000")


def make_bench(store: Store, run_id: str) -> str:
    bench = store.create_bench(
        suite="examples",
        suite_hash="abc",
        mode="strict",
        backend="cuda",
        source="search",
        options={"steps": 4},
        provenance={"gpu": "NVIDIA H200", "triton": "3.6.0"},
        problems=[(1, "row_softmax", "h1"), (2, "layernorm", "h2"), (3, "mlp", "h3")],
    )
    store.start_bench_problem(bench.id, 1, task_id=store.run(run_id).task_id, run_id=run_id)
    store.finish_bench_problem(
        bench.id, 1, ProblemVerdict(status="ok", message="correct", speedup=2.5, compile_speedup=1.25, seconds=3.0)
    )
    store.finish_bench_problem(bench.id, 2, ProblemVerdict(status="mismatch", message="wrong", flags=["x"]))
    return bench.id


def test_the_bench_page_has_its_metrics_table_plot_and_each_problems_tree(store: Store) -> None:
    run_id, ids = make_run(store)
    bench_id = make_bench(store, run_id)
    data = bench_page_data(services_over(store), bench_id)
    expected = summarize([ProblemScore("ok", 2.5, 1.25), ProblemScore("mismatch"), ProblemScore(None)]).as_dict()
    assert data["summary"] == expected
    html = render_bench_html(data)
    page = Elements(html)
    assert [a["data-problem-id"] for a in page.with_attr("data-problem-id")] == ["1", "2", "3"]
    assert [a["href"] for tag, a in page.tags if tag == "a"] == [f"#{run_id}", f"#{run_id}"]
    assert [a["id"] for tag, a in page.tags if tag == "details"] == [run_id]
    trees = [a for tag, a in page.tags if tag == "svg" and a.get("class") == "tree"]
    assert [t["data-run-id"] for t in trees] == [run_id]
    assert sorted(int(a["data-node-id"]) for a in page.with_attr("data-node-id")) == sorted(ids.values())
    assert any(a.get("id") == "distribution-plot" for _, a in page.tags)
    bars = [a for tag, a in page.tags if tag == "rect" and "bar" in a.get("class", "")]
    assert len(bars) == 2 * 9  # two baselines, nine bins
    assert "1/3</span> problems correct (33%)" in html
    assert "2.50×" in html and "1.25×" in html and "NVIDIA H200" in html


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="adaexplore")
    add_report_parser(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(["report", *argv])


def test_report_writes_one_file_that_never_reloads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = Settings(home=tmp_path)
    store = open_store(settings.database_url)
    run_id, ids = make_run(store)
    store.close()
    target = tmp_path / "run.html"
    assert run_report(parse(run_id, "--html", str(target)), settings) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"wrote {target} (") and f"run {run_id} on task row_softmax, {len(ids)} nodes" in out
    html = target.read_text()
    assert 'http-equiv="refresh"' not in html  # the run is still running, but a file does not reload
    assert len(Elements(html).with_attr("data-node-id")) == len(ids)


def test_report_of_an_id_that_is_neither_says_which_ids_exist(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    with pytest.raises(NotFoundError, match="there is no database"):
        run_report(parse("run-1", "--html", str(tmp_path / "x.html")), settings)
    store = open_store(settings.database_url)
    run_id, _ = make_run(store)
    store.close()
    with pytest.raises(RequestError, match=rf"1 run \({run_id}\) and no benches: `adaexplore runs list` and"):
        run_report(parse("best", "--html", str(tmp_path / "x.html")), settings)
    with pytest.raises(NotFoundError, match="no run has id 'run-1'"):
        run_report(parse("run-1", "--html", str(tmp_path / "x.html")), settings)
    with pytest.raises(RequestError, match="does not exist"):
        run_report(parse(run_id, "--html", str(tmp_path / "missing" / "x.html")), settings)
    assert not (tmp_path / "x.html").exists()


def test_a_deep_tree_of_thousands_of_nodes_renders_in_time(store: Store) -> None:
    run_id, _ = make_run(store)
    data = run_page_data(services_over(store), run_id)
    nodes = data["run"]["nodes"]
    last = nodes[-1]
    for index in range(3000):  # a chain far deeper than Python's recursion limit
        parent = last
        last = {**parent, "id": parent["id"] + 1, "parent": parent["id"], "depth": parent["depth"] + 1}
        last["step"] = parent["step"] + 1
        last["kind"] = "small" if index % 5 else "large"
        nodes.append(last)
    start = time.perf_counter()
    html = render_run_html(data)
    assert time.perf_counter() - start < 2.0
    assert len(Elements(html).with_attr("data-node-id")) == len(nodes)


def test_a_degenerate_task_is_named_on_its_run_page_and_left_out_of_its_bench_summary(store: Store) -> None:
    run_id, _ = make_run(store)
    bench_id = make_bench(store, run_id)
    found = Degeneracy(kind="constant", value=0.0, sizes="full")
    store.set_task_degeneracy(store.run(run_id).task_id, found.model_dump_json(), "full")
    run_html = render_run_html(run_page_data(services_over(store), run_id))
    assert "The task is degenerate: its output is 0 everywhere" in run_html
    data = bench_page_data(services_over(store), bench_id)
    assert [p["degenerate"] for p in data["problems"]] == [found.line(), None, None]
    assert data["summary"]["degenerate"] == ["row_softmax"] and data["summary"]["problems"] == 2
    html = render_bench_html(data)
    assert "0/2</span> problems correct" in html and "1 degenerate left out" in html
    assert any("left out of every number" in note for note in data["notes"])
    # a check at small sizes does not undo what one at full size found
    store.set_task_degeneracy(store.run(run_id).task_id, None, "small")
    assert store.task(store.run(run_id).task_id).degeneracy == found
