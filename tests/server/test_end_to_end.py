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
from adaexplore.store import open_store

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests/executor/data"
# The cheapest example on a CPU: two programs of an elementwise kernel in the interpreter.
EXAMPLE_TASK = (ROOT / "examples/tasks/elementwise_chain.py").read_text()
EXAMPLE_KERNELS = ROOT / "examples/kernels/elementwise_chain"
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


async def step(client: Client, run_id: str, code: str, **options: object) -> tuple[dict, dict]:
    """One AdaExplore step as a client takes it: what select_uct chose, and compile_and_profile's result."""
    chosen = await call(client, "select_uct", run_id=run_id)
    context = await call(client, "expand_node", run_id=run_id, node_id=chosen["node_id"], action=chosen["action"])
    result = await call(client, "compile_and_profile", code=code, expansion_id=context["expansion_id"], **options)
    return chosen, result


async def test_three_adaexplore_steps_over_stdio_on_an_example_task(tmp_path: Path) -> None:
    correct = (EXAMPLE_KERNELS / "correct.py").read_text()
    wrong = (EXAMPLE_KERNELS / "wrong_result.py").read_text()
    retuned = correct.replace("num_warps=4)", "num_warps=2)")
    assert retuned != correct
    env = dict(os.environ, ADAEXPLORE_HOME=str(tmp_path))
    env.pop("ADAEXPLORE_DB", None)
    params = StdioServerParameters(command=sys.executable, args=["-m", "adaexplore", "serve"], env=env, cwd=str(ROOT))
    with anyio.fail_after(300):
        async with Client(params) as client:
            # a task that parses but does not import is refused when it is registered, with the reason
            refused = await client.call_tool(
                "create_task", {"source": "import no_such_module_xyz\n" + EXAMPLE_TASK, "name": "broken"}
            )
            assert refused.is_error and "needs no_such_module_xyz, which is not installed" in refused.content[0].text
            task = await call(client, "create_task", source=EXAMPLE_TASK, name="elementwise_chain")
            run = await call(
                client, "start_run", task_id=task["task_id"], seed=11, model="test client", backend="interpret"
            )
            root = run["root_node_id"]
            steps = []
            for code in (correct, wrong, retuned):
                chosen, result = await step(client, run["run_id"], code)
                assert result["evaluation"]["backends"] == ["interpret"], result["evaluation"]["backends"]
                steps.append((chosen, result))
                if code is wrong:
                    assert result["status"] == "mismatch", result["message"]
                    recorded = await call(
                        client,
                        "record_failure",
                        task_id=task["task_id"],
                        node_id=result["node_id"],
                        rule="You cannot add the shift before scaling; compute x * scale + shift, then the GELU.",
                    )
                    assert recorded["merged_by"] == "new"
                    assert (recorded["rule"]["occurrences"], recorded["rule"]["tasks"]) == (1, 1)
                else:
                    assert result["status"] == "ok", result["message"]
            (first_chosen, first), _, (_, third) = steps
            # The first step of an empty tree is a large step from the root, and it is the best so far; the
            # interpreter times nothing, so the equally correct third kernel does not displace it.
            assert (first_chosen["node_id"], first_chosen["action"]) == (root, "large")
            assert first["is_new_best"] and not third["is_new_best"]

            # The tree: each node hangs where select_uct said, with the step it took and its verdict.
            for chosen, result in steps:
                node = await call(client, "get_node", node_id=result["node_id"], include_code=False)
                assert (node["parent_id"], node["kind"], node["status"]) == (
                    chosen["node_id"],
                    chosen["action"],
                    result["status"],
                )
            assert (await call(client, "get_node", node_id=root, include_code=False))["visits"] == 3
            state = await call(client, "get_run", run_id=run["run_id"])
            assert state["steps_done"] == 3 and state["counts"] == {"ok": 2, "mismatch": 1}
            assert state["best_node_id"] == first["node_id"]
            tree = (await client.read_resource(f"run://{run['run_id']}/tree")).contents[0].text
            lines = tree.splitlines()
            assert lines[1].startswith(f"best: node {first['node_id']}, ")
            assert len(lines) == 3 + 4  # header lines, the root and three nodes
            for _, result in steps:
                (line,) = [x for x in lines if f"#{result['node_id']} " in x]
                assert result["status"] in line

            # Seen once, in one task: counted, but not yet put into prompts.
            assert not recorded["injected"]
            memory = await call(client, "get_skill_memory", format="data")
            assert recorded["rule"]["rule_id"] not in [r["rule_id"] for r in memory["rules"]]
            # with the threshold lowered to what it has, a client sees it
            lowered = await call(client, "get_skill_memory", format="data", min_occurrences=1, min_tasks=1)
            assert recorded["rule"]["rule_id"] in [r["rule_id"] for r in lowered["rules"]]

            # The best kernel is the first correct one, code and all.
            best = await call(client, "best_kernel", run_id=run["run_id"])
            assert best["node_id"] == first["node_id"] and best["code"] == correct
    # What the server wrote, read back from its database once it has exited.
    store = open_store(f"sqlite:///{tmp_path / 'adaexplore.db'}")
    try:
        rule = store.rule(recorded["rule"]["rule_id"])
        assert rule.text.startswith("You cannot add the shift before scaling")
        assert (rule.occurrences, rule.tasks) == (1, 1)
    finally:
        store.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_http(
    tmp_path: Path, *args: str, token: str | None = None, reach: str = "127.0.0.1"
) -> tuple[subprocess.Popen[str], int]:
    """`adaexplore serve --http` on a free port with `args`; waits until it accepts connections at `reach`."""
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
            with socket.create_connection((reach, port), timeout=0.5):
                return process, port
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise AssertionError(f"the HTTP server did not start: {process.stderr.read() if process.stderr else ''}")


async def tools_over_http(port: int, token: str | None = None, host: str = "127.0.0.1") -> int:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(f"http://{host}:{port}/mcp", http_client=http)) as client,
    ):
        return len((await client.list_tools()).tools)


def post(port: int, headers: dict[str, str], host: str = "127.0.0.1") -> httpx2.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }
    return httpx2.post(
        f"http://{host}:{port}/mcp",
        json=body,
        timeout=30,
        headers={"Accept": "application/json, text/event-stream", **headers},
    )


# 127.0.0.2 is loopback too (Linux routes all of 127/8 to lo), but not one of the strings the SDK guards by itself.
@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2"])
async def test_http_on_loopback_refuses_a_foreign_host_or_origin(tmp_path: Path, host: str) -> None:
    process, port = start_http(tmp_path, "--host", host, reach=host)
    try:
        assert await tools_over_http(port, host=host) == 12
        assert post(port, {"Origin": f"http://{host}:{port}"}, host=host).status_code == 200
        assert post(port, {"Host": "evil.example.com"}, host=host).status_code == 421
        assert post(port, {"Host": f"evil.example.com:{port}"}, host=host).status_code == 421
        assert post(port, {"Origin": "http://evil.example.com"}, host=host).status_code == 403
        own_host_foreign_page = {"Host": f"{host}:{port}", "Origin": f"http://evil.example.com:{port}"}
        assert post(port, own_host_foreign_page, host=host).status_code == 403
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
        url = process.stderr.readline()  # one a client can use, with the token: not http://0.0.0.0:...
        assert f"give your client the URL http://{socket.gethostname()}:{port}/mcp (or this machine's" in url, url
        assert f"send the header 'Authorization: Bearer {token.group(1)}'" in url, url
        assert post(port, {}).status_code == 401
        assert await tools_over_http(port, token=token.group(1)) == 12
    finally:
        process.kill()
        process.wait()


# A hung trial would be killed after TRIAL_TIMEOUT_S; the cancellation test needs its worker gone far sooner.
TRIAL_TIMEOUT_S = 120.0
KILLED_WITHIN_S = 5.0


@pytest.fixture(scope="module")
async def real_server_client(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    settings = Settings(
        home=tmp_path_factory.mktemp("server"),
        executor=ExecutorConfig(backend="interpret", trial_timeout_s=TRIAL_TIMEOUT_S),
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


def running(pid: int) -> bool:
    """Whether the process exists and is not a zombie waiting to be reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


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
            assert pids and running(pids[-1])
            tg.cancel_scope.cancel()
    assert not scope.cancelled_caught, "the hanging kernel never reached its first trial"
    # The trial would run on for TRIAL_TIMEOUT_S; only the cancellation can end it this soon.
    with anyio.fail_after(KILLED_WITHIN_S):
        while running(pids[-1]):
            await anyio.sleep(0.05)
    # The server is still there and answers.
    assert (await call(client, "get_skill_memory", format="data"))["rules"]
