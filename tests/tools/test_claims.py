"""Steps under way are seen by every process on the database: two servers on one run cannot overshoot it,
and a server that dies mid-step does not hold the run's last step for ever."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from adaexplore.errors import ConflictError
from adaexplore.store import ClaimSpec, open_store
from adaexplore.tools import (
    CompileAndProfileRequest,
    CreateTaskRequest,
    ExpandNodeRequest,
    FinishRunRequest,
    GetRunRequest,
    SelectUctRequest,
    Services,
    StartRunRequest,
    compile_and_profile,
    create_task,
    expand_node,
    finish_run,
    get_run,
    select_uct,
    start_run,
)
from tests.conftest import Databases
from tests.fakes import FakeEvaluator, by_hash

ROOT = Path(__file__).parents[2]
TASK_FILE = ROOT / "tests" / "executor" / "data" / "scale_relu_task.py"

pytestmark = pytest.mark.anyio

# A second server: it takes one large step from the root of a run, and its evaluation waits for a file.
_OTHER_SERVER = textwrap.dedent(
    """
    import sys, anyio
    from pathlib import Path
    from adaexplore.config import Settings
    from adaexplore.store import open_store
    from adaexplore.tools import CompileAndProfileRequest, ExpandNodeRequest, Services, compile_and_profile, expand_node
    from tests.fakes import FakeEvaluator, by_hash

    url, run_id, root, gate = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])

    class Gated(FakeEvaluator):
        async def evaluate(self, task, code, options=None, *, progress=None):
            print("evaluating", flush=True)
            while not gate.exists():
                await anyio.sleep(0.02)
            return await super().evaluate(task, code, options, progress=progress)

    async def main():
        svc = Services(settings=Settings(), store=open_store(url), evaluator=Gated(by_hash))
        context = expand_node(svc, ExpandNodeRequest(run_id=run_id, node_id=root, action="large"))
        request = CompileAndProfileRequest(code="other", expansion_id=context.expansion_id)
        result = await compile_and_profile(svc, request)
        print("landed", result.node_id, flush=True)

    anyio.run(main)
    """
)


def _other_server(url: str, run_id: str, root: int, gate: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _OTHER_SERVER, url, run_id, str(root), str(gate)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,  # `python -c` puts the working directory first on the path: the project and its tests
        start_new_session=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the other server's claim is written before its evaluation starts
    assert line.strip() == "evaluating", proc.stderr.read() if proc.stderr else line
    return proc


@pytest.fixture
def svc(databases: Databases, tmp_path: Path) -> Services:
    settings = databases.settings(tmp_path)
    return Services(settings=settings, store=open_store(settings.database_url), evaluator=FakeEvaluator(by_hash))


async def test_a_step_under_way_in_another_process_counts_against_the_run(svc: Services, tmp_path: Path) -> None:
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=1, total_steps=2))
    first = expand_node(svc, ExpandNodeRequest(run_id=run.run_id, node_id=run.root_node_id, action="large"))
    await compile_and_profile(svc, CompileAndProfileRequest(code="mine", expansion_id=first.expansion_id))
    gate = tmp_path / "gate"
    other = _other_server(svc.settings.database_url, run.run_id, run.root_node_id, gate)
    try:
        # the run's last step is the other server's: this one can neither select, expand, evaluate nor finish
        with pytest.raises(ConflictError, match="the other 1 are being evaluated now"):
            select_uct(svc, SelectUctRequest(run_id=run.run_id))
        with pytest.raises(ConflictError, match="the other 1 are being evaluated now"):
            await compile_and_profile(
                svc,
                CompileAndProfileRequest(
                    code="mine too", run_id=run.run_id, parent_id=run.root_node_id, action="large"
                ),
            )
        with pytest.raises(ConflictError, match="1 step\\(s\\) being evaluated now"):
            await finish_run(svc, FinishRunRequest(run_id=run.run_id))
        assert svc.evaluator.calls == 1  # nothing refused was evaluated
        gate.touch()
        out, err = other.communicate(timeout=60)
    finally:
        other.kill()
    assert other.returncode == 0, err
    assert out.startswith("landed")
    assert get_run(svc, GetRunRequest(run_id=run.run_id)).steps_done == 2
    assert svc.store.claims(run.run_id) == []  # landing released the claim in the same transaction
    assert (await finish_run(svc, FinishRunRequest(run_id=run.run_id))).message.startswith("finished")


async def test_a_server_killed_mid_step_does_not_hold_the_run(svc: Services, tmp_path: Path) -> None:
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=1, total_steps=1))
    other = _other_server(svc.settings.database_url, run.run_id, run.root_node_id, tmp_path / "never")
    os.killpg(other.pid, signal.SIGKILL)
    other.wait(timeout=30)
    rows = svc.store._db.execute("SELECT pid FROM claims WHERE run_id=?", (run.run_id,)).fetchall()
    assert [r["pid"] for r in rows] == [other.pid]  # left behind by the killed server ...
    assert svc.store.claims(run.run_id) == []  # ... and not counted: its process is gone
    chosen = select_uct(svc, SelectUctRequest(run_id=run.run_id))
    context = expand_node(svc, ExpandNodeRequest(run_id=run.run_id, node_id=chosen.node_id, action=chosen.action))
    done = await compile_and_profile(svc, CompileAndProfileRequest(code="k", expansion_id=context.expansion_id))
    assert done.node_id is not None
    assert svc.store._db.execute("SELECT COUNT(*) FROM claims").fetchone()[0] == 0  # removed by the next claim


async def test_a_check_that_refuses_writes_no_claim(svc: Services) -> None:
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=1))

    def refuse() -> ClaimSpec:
        raise ConflictError("no")

    with pytest.raises(ConflictError, match="no"):
        svc.store.claim(refuse)
    assert svc.store.claims(run.run_id) == []
    spec = ClaimSpec(run_id=run.run_id, parent_id=run.root_node_id, kind="large")
    claim = svc.store.claim(lambda: spec)
    assert [(c.id, c.kind, c.pid) for c in svc.store.claims(run.run_id)] == [(claim, "large", os.getpid())]
    svc.store.release_claim(claim)
    svc.store.release_claim(claim)  # twice is no error
    assert svc.store.claims(run.run_id) == []
