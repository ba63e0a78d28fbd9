"""`adaexplore serve` answers at once (issue 27): `initialize`, `tools/list` and the tools that only read the store
do not wait for the evaluator's start (a worker importing torch and triton, seconds on a quiet machine and tens
of seconds on a busy one); the tools that evaluate wait for it, saying so in their progress, and get a clear
error when it cannot start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from adaexplore import tools
from adaexplore.config import ExecutorConfig, Settings
from adaexplore.server import build_server

ROOT = Path(__file__).resolve().parents[2]
TASK = (ROOT / "examples/tasks/row_softmax.py").read_text()
KERNEL = (ROOT / "examples/kernels/row_softmax/correct.py").read_text()

pytestmark = pytest.mark.anyio


def slow_start_path(tmp_path: Path) -> str:
    """A PYTHONPATH whose first folder reaches torch by a link: the workers would import torch from elsewhere than
    its metadata says, so the evaluator's start asks a process that imports torch (as on a GPU machine) instead
    of reading the metadata, and takes seconds, not milliseconds."""
    import importlib.metadata

    folder = tmp_path / "torch-by-link"
    folder.mkdir()
    (folder / "torch").symlink_to(Path(str(importlib.metadata.distribution("torch").locate_file("torch"))))
    return os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH")) if p)


async def test_serve_answers_at_once_and_the_first_evaluation_waits_for_the_evaluator(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    with tools.open_reader(settings) as svc:  # registered beforehand, so that the first call to evaluate is
        task = tools.create_task(svc, tools.CreateTaskRequest(source=TASK, name="row_softmax"))  # compile_and_profile
    env = dict(os.environ, ADAEXPLORE_HOME=str(tmp_path), PYTHONPATH=slow_start_path(tmp_path))
    env.pop("ADAEXPLORE_DB", None)
    params = StdioServerParameters(command=sys.executable, args=["-m", "adaexplore", "serve"], env=env, cwd=str(ROOT))
    heard: list[str] = []

    async def on_progress(_: float, __: float | None, message: str | None) -> None:
        heard.append(message or "")

    with anyio.fail_after(300):
        async with Client(params) as client:  # it spawns the server and waits for the answer to `initialize`
            listed = await client.list_tools()
            memory = await client.call_tool("get_skill_memory", {"format": "data"})
            result = await client.call_tool(
                "compile_and_profile",
                {"code": KERNEL, "task_id": task.task_id, "backend": "interpret"},
                progress_callback=on_progress,
            )
    assert "compile_and_profile" in {tool.name for tool in listed.tools}
    assert not memory.is_error, memory.content
    assert not result.is_error, result.content[0].text
    assert result.structured_content["status"] == "ok", result.structured_content["message"]
    # The evaluator was still starting when the kernel came, so `initialize`, `tools/list` and the read before it
    # did not wait for the start; the call to evaluate did, and said so. (How fast the answers come is measured by
    # benchmarks/server_start.py, not asserted here.)
    assert any(message.startswith("starting: the evaluator is starting") for message in heard), heard


async def test_an_evaluator_that_cannot_start_is_a_clear_error_on_each_call_that_needs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # no process imports torch and triton within 50 ms, so the start fails the same way on every machine
    monkeypatch.setenv("PYTHONPATH", slow_start_path(tmp_path))
    settings = Settings(home=tmp_path, executor=ExecutorConfig(load_timeout_s=0.05))
    with anyio.fail_after(120):
        async with Client(build_server(settings)) as client:
            memory = await client.call_tool("get_skill_memory", {})
            assert not memory.is_error, memory.content[0].text
            for _ in range(2):  # the second call starts it again, and fails again the same way
                refused = await client.call_tool("create_task", {"source": TASK})
                assert refused.is_error
                assert refused.content[0].text == (
                    "create_task: the evaluator failed (not your kernel): a worker did not finish importing torch "
                    "and triton within 0.05 s (executor.load_timeout_s); try again"
                )


def test_serve_imports_no_report_code_before_it_answers() -> None:
    """What `adaexplore serve` imports before it can answer `initialize` leaves out the report pages' modules (and
    rich and the HTML templates behind them): they load with the first page or `report` command that needs them."""
    probe = "import sys, adaexplore.cli, adaexplore.server; print(*sorted(sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    loaded = done.stdout.split()
    assert "adaexplore.server" in loaded
    assert [m for m in loaded if m.startswith(("adaexplore.bench", "rich"))] == [], loaded
