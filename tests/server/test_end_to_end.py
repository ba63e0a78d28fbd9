"""The real server as hosts run it: `adaexplore serve` over stdio and over streamable HTTP, with the real
evaluator (interpret backend on machines without a GPU), plus concurrency and cancellation."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from adaexplore.config import ExecutorConfig, Settings
from adaexplore.server import build_server

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests/executor/data"
TASK = (DATA / "scale_relu_task.py").read_text()
KERNEL = (DATA / "scale_relu_kernel.py").read_text()
WRONG = KERNEL.replace("x * scale + 1.0", "x * scale + 2.0")
HANG = KERNEL.replace(
    "    x = tl.load", "    while tl.load(x_ptr, volatile=True) < 1e30:\n        pass\n    x = tl.load"
)

pytestmark = pytest.mark.anyio


async def call(client: Client, tool: str, **arguments: object) -> dict:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def step(client: Client, run_id: str, code: str) -> dict:
    chosen = await call(client, "select_uct", run_id=run_id)
    context = await call(client, "expand_node", run_id=run_id, node_id=chosen["node_id"], action=chosen["action"])
    return await call(client, "compile_and_profile", code=code, expansion_id=context["expansion_id"])


async def test_three_adaexplore_steps_over_stdio_with_the_real_evaluator(tmp_path: Path) -> None:
    env = dict(os.environ, ADAEXPLORE_HOME=str(tmp_path))
    params = StdioServerParameters(command=sys.executable, args=["-m", "adaexplore", "serve"], env=env, cwd=str(ROOT))
    with anyio.fail_after(300):
        async with Client(params) as client:
            task = await call(client, "create_task", source=TASK, name="scale_relu")
            run = await call(client, "start_run", task_id=task["task_id"], seed=11, model="test client")
            first = await step(client, run["run_id"], KERNEL)
            assert first["status"] == "ok" and first["is_new_best"], first["message"]
            second = await step(client, run["run_id"], WRONG)
            assert second["status"] == "mismatch", second["message"]
            recorded = await call(
                client,
                "record_failure",
                task_id=task["task_id"],
                node_id=second["node_id"],
                rule="You cannot change the constant in the epilogue; keep relu(x * scale + 1).",
            )
            assert recorded["rule"]["occurrences"] == 1 and recorded["rule"]["tasks"] == 1
            third = await step(client, run["run_id"], KERNEL.replace("BLOCK=256)", "BLOCK=256, num_warps=2)"))
            assert third["status"] == "ok", third["message"]
            state = await call(client, "get_run", run_id=run["run_id"])
            assert state["steps_done"] == 3 and state["counts"] == {"ok": 2, "mismatch": 1}
            best = await call(client, "best_kernel", run_id=run["run_id"])
            assert best["node_id"] in (first["node_id"], third["node_id"]) and best["code"] in (
                KERNEL,
                third and best["code"],
            )
            tree = (await client.read_resource(f"run://{run['run_id']}/tree")).contents[0].text
            assert tree.count("\n") == 2 + 4  # header lines, the root and three nodes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_http(tmp_path: Path, *args: str, token: str | None = None) -> tuple[subprocess.Popen[str], int]:
    port = free_port()
    env = dict(os.environ, ADAEXPLORE_HOME=str(tmp_path))
    env.pop("ADAEXPLORE_TOKEN", None)
    if token:
        env["ADAEXPLORE_TOKEN"] = token
    process = subprocess.Popen(
        [sys.executable, "-m", "adaexplore", "serve", "--http", "--port", str(port), *args],
        env=env,
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return process, port
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise AssertionError(f"the HTTP server did not start: {process.stderr.read() if process.stderr else ''}")


async def tools_over_http(port: int, token: str | None = None) -> int:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)) as client,
    ):
        return len((await client.list_tools()).tools)


def post(port: int, headers: dict[str, str]) -> httpx2.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }
    return httpx2.post(
        f"http://127.0.0.1:{port}/mcp",
        json=body,
        timeout=30,
        headers={"Accept": "application/json, text/event-stream", **headers},
    )


async def test_http_on_loopback_refuses_a_foreign_host_header(tmp_path: Path) -> None:
    process, port = start_http(tmp_path)
    try:
        assert await tools_over_http(port) == 12
        assert post(port, {"Host": "evil.example"}).status_code == 421
    finally:
        process.kill()
        process.wait()


async def test_http_with_a_token_refuses_requests_without_it(tmp_path: Path) -> None:
    process, port = start_http(tmp_path, token="s3cret")
    try:
        assert post(port, {}).status_code == 401
        assert post(port, {"Authorization": "Bearer wrong"}).status_code == 401
        assert await tools_over_http(port, token="s3cret") == 12
    finally:
        process.kill()
        process.wait()


async def test_http_on_all_interfaces_generates_a_token_and_requires_it(tmp_path: Path) -> None:
    process, port = start_http(tmp_path, "--host", "0.0.0.0")
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        token = re.search(r"Bearer (\S+)'", line)
        assert token, line
        assert post(port, {}).status_code == 401
        assert await tools_over_http(port, token=token.group(1)) == 12
    finally:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
async def real_server_client(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    settings = Settings(
        home=tmp_path_factory.mktemp("server"), executor=ExecutorConfig(backend="interpret", trial_timeout_s=10.0)
    )
    async with Client(build_server(settings)) as client:
        yield client


async def test_twenty_concurrent_evaluations_each_get_their_own_result(real_server_client: Client) -> None:
    client = real_server_client
    task = await call(client, "create_task", source=TASK)
    run = await call(client, "start_run", task_id=task["task_id"], seed=1)
    head = (
        await call(
            client,
            "compile_and_profile",
            code=KERNEL,
            run_id=run["run_id"],
            parent_id=run["root_node_id"],
            action="large",
        )
    )["node_id"]
    codes = [(WRONG if i % 2 else KERNEL) + f"\n# variant {i}\n" for i in range(20)]
    results: list[dict] = [{}] * len(codes)

    async def one(index: int) -> None:
        results[index] = await call(
            client, "compile_and_profile", code=codes[index], run_id=run["run_id"], parent_id=head, action="large"
        )

    with anyio.fail_after(600):
        async with anyio.create_task_group() as tg:
            for index in range(len(codes)):
                tg.start_soon(one, index)
    assert [r["status"] for r in results] == ["ok", "mismatch"] * 10
    assert len({r["node_id"] for r in results}) == 20
    for index, result in enumerate(results):
        node = await call(client, "get_node", node_id=result["node_id"])
        assert node["code"] == codes[index] and node["parent_id"] == head
    state = await call(client, "get_run", run_id=run["run_id"])
    assert state["steps_done"] == 21 and state["counts"] == {"ok": 11, "mismatch": 10}
    root = await call(client, "get_node", node_id=run["root_node_id"], include_code=False)
    assert root["visits"] == 21


async def test_cancelling_a_call_kills_its_worker(real_server_client: Client) -> None:
    client = real_server_client
    task = await call(client, "create_task", source=TASK)
    pids: list[int] = []
    in_trial = anyio.Event()

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        match = re.search(r"worker pid (\d+)", message or "")
        if match:
            pids.append(int(match.group(1)))
        if message and message.startswith("trial"):
            in_trial.set()

    with anyio.move_on_after(60) as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                lambda: client.call_tool(
                    "compile_and_profile", {"code": HANG, "task_id": task["task_id"]}, progress_callback=on_progress
                )
            )
            await in_trial.wait()
            tg.cancel_scope.cancel()
    assert not scope.cancelled_caught and pids
    with anyio.fail_after(20):
        while Path(f"/proc/{pids[-1]}").exists() and "Z" not in Path(f"/proc/{pids[-1]}/stat").read_text().split()[2]:
            await anyio.sleep(0.1)
    # The server is still there and answers.
    assert (await call(client, "get_skill_memory", format="data"))["rules"]
