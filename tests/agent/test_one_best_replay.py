"""One best after a real replay `explore` (compile + interpret without a GPU, timed kernels on one): the summary,
`runs list`, `runs show`, best_kernel and the report page name the same node with the same number and say
where the number comes from."""

from __future__ import annotations

import re
from pathlib import Path

from adaexplore.bench._report_data import run_page_data
from adaexplore.config import Settings
from adaexplore.store import open_store
from adaexplore.tools import BestKernelRequest, Services, best_kernel, speedup_text
from tests.agent.scripted import adaexplore, cli_env
from tests.conftest import EXAMPLES, ROOT
from tests.fakes import FakeEvaluator

TASK = EXAMPLES / "tasks" / "row_softmax.py"


def never(code: str, call: int) -> tuple:
    raise AssertionError("reading the best kernel must evaluate nothing")


def test_the_summary_runs_list_runs_show_best_kernel_and_the_report_agree(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = cli_env(home, None)
    done = adaexplore("explore", str(TASK.relative_to(ROOT)), "--steps", "6", "--seed", "2", env=env)
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    store = open_store(f"sqlite:///{home / 'adaexplore.db'}")
    try:
        (run,) = store.runs()
        assert run.status == "finished"
        svc = Services(settings=Settings(home=home), store=store, evaluator=FakeEvaluator(never))
        best = best_kernel(svc, BestKernelRequest(run_id=run.id))
        page = run_page_data(svc, run.id)["run"]
    finally:
        store.close()
    number = speedup_text(best.speedup)  # "1.234x" or "untimed"
    timed = best.speedup is not None
    assert best.measured == ("re-measured" if timed and best.verified else "search-time" if timed else "untimed")

    # the summary table, and the line that names the best kernel's file
    (row,) = [line for line in done.stdout.splitlines() if line.startswith("row_softmax ") and run.id in line]
    expected = f"{number} node {best.node_id} ({best.measured}" if timed else f"node {best.node_id} (untimed"
    assert expected in row, row
    (named,) = [line for line in done.stdout.splitlines() if line.startswith("row_softmax: best kernel")]
    assert expected in named, named

    # runs list: the same number in the best column, the same node and source at the end
    listed = adaexplore("runs", "list", env=env)
    (line,) = [x for x in listed.stdout.splitlines() if x.startswith(run.id)]
    assert re.search(rf"\s{re.escape(number)}\s", line), line
    assert f"node {best.node_id}, {best.measured}" in line, line
    tied = len(best.tied_node_ids)
    assert (f"tied with {tied} more" in line) == bool(tied), line

    # runs show: the best line and the marked path
    shown = adaexplore("runs", "show", run.id, env=env).stdout.splitlines()
    assert shown[1].startswith(f"best: node {best.node_id}, ") and (number in shown[1]), shown[1]
    assert best.measured in shown[1]
    assert any(x.startswith("*") and f"#{best.node_id} " in x for x in shown), shown

    # the report page
    assert (page["best_node_id"], page["best_speedup"], page["best_measured"]) == (
        best.node_id,
        best.speedup,
        best.measured,
    )
    assert page["best_tied"] == best.tied_node_ids and page["confirmed"] == best.verified
    assert page["best_path"][-1] == best.node_id
