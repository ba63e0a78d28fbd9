"""Two MCP servers and a headless `explore` on one run of a PostgreSQL store at once, as a team on several
hosts would share it: the run takes exactly its steps, no node takes more small steps than its limit, and no
node or back-propagated visit is lost."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from adaexplore.config import SearchConfig
from adaexplore.domain import Kind
from adaexplore.store import open_store
from adaexplore.tools import CreateTaskRequest, Services, StartRunRequest, create_task, start_run
from tests.conftest import Databases
from tests.fakes import FakeEvaluator, by_hash
from tests.postgres import Server

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
TASK_FILE = ROOT / "tests" / "executor" / "data" / "scale_relu_task.py"
STEPS, SERVER_STEPS = 40, 30  # the servers stop at 30 steps; the explore takes the rest and finishes the run


def _start(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(HERE / script), *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.fixture
def databases(postgres_server: Server) -> Iterator[Databases]:
    """PostgreSQL only (on SQLite, tests/tools/test_resume.py shares a run between processes of one machine)."""
    made = Databases("postgresql", postgres_server)
    yield made
    made.drop()


def test_two_servers_and_an_explore_share_one_run(databases: Databases, tmp_path: Path) -> None:
    settings = databases.settings(tmp_path)
    svc = Services(settings=settings, store=open_store(settings.database_url), evaluator=FakeEvaluator(by_hash))
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run_id = start_run(svc, StartRunRequest(task_id=task.task_id, seed=3, total_steps=STEPS)).run_id
    url = settings.database_url
    processes = [
        _start("drive_run.py", url, run_id, str(SERVER_STEPS)),
        _start("drive_run.py", url, run_id, str(SERVER_STEPS)),
        _start("explore_run.py", url, run_id, str(tmp_path / "runs")),
    ]
    outputs = []
    for process in processes:
        out, err = process.communicate(timeout=240)
        assert process.returncode == 0, err[-3000:]
        outputs.append(out)
    status, taken = outputs[2].split()[-2:]
    assert status == "finished"
    assert 1 <= int(taken.removeprefix("taken=")) < STEPS  # the explore took some of the steps, the servers the rest

    store = svc.store
    run = store.run(run_id)
    nodes = {n.id: n for n in store.nodes(run_id)}
    children: dict[int, list[int]] = {}
    for n in nodes.values():
        if n.parent_id is not None:
            children.setdefault(n.parent_id, []).append(n.id)
    assert run.status == "finished" and run.steps == STEPS
    assert sorted(n.seq for n in nodes.values() if n.kind is not Kind.root) == list(range(1, STEPS + 1))
    limit = SearchConfig().small_step_limit
    for n in nodes.values():
        mine = children.get(n.id, [])
        small = [c for c in mine if nodes[c].kind is Kind.small]
        assert n.children == len(mine) and n.small_children == len(small) <= limit
        assert n.visits == (0 if n.kind is Kind.root else 1) + sum(nodes[c].visits for c in mine)
    assert nodes[run.root_id].visits == STEPS
    assert store.claims(run_id) == []
