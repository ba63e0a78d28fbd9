"""Every tool, resource and prompt through the SDK's in-memory client, error paths included."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path

import pytest
from mcp import Client, MCPError
from mcp.types import INVALID_PARAMS

from adaexplore.config import Settings
from adaexplore.executor import ErrorDetail, Status
from adaexplore.server import build_server
from adaexplore.store import open_store
from adaexplore.tools import Services, import_memory
from tests.fakes import FakeEvaluator, make_evaluation

ROOT = Path(__file__).resolve().parents[2]
TASK = (ROOT / "tests/executor/data/scale_relu_task.py").read_text()

pytestmark = pytest.mark.anyio


def verdict(code: str, _: int) -> tuple[Status, float | None]:
    if "wrong" in code:
        return Status.mismatch, None
    if "broken" in code:
        return Status.compile_error, None
    return Status.ok, 1.0 + len(code) % 7 / 10


class HugeTraceback(FakeEvaluator):
    """A verdict whose traceback is far over any answer's budget."""

    async def evaluate(self, task, code, options=None, *, progress=None):  # type: ignore[no-untyped-def]
        result = make_evaluation(task, code, Status.runtime_error, None)
        return result.model_copy(
            update={
                "error": ErrorDetail(type="RuntimeError", message="boom", phase="trial 1", traceback="frame\n" * 60_000)
            }
        )


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path)


def server_with(settings: Settings, evaluator: FakeEvaluator | None = None):  # type: ignore[no-untyped-def]
    @contextlib.asynccontextmanager
    async def services(s: Settings) -> AsyncIterator[Services]:
        store = open_store(s.database_url)
        try:
            yield Services(settings=s, store=store, evaluator=evaluator or FakeEvaluator(verdict))
        finally:
            store.close()

    return build_server(settings, services=services)


async def call(client: Client, tool: str, **arguments: object) -> dict:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def error_of(client: Client, tool: str, **arguments: object) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    return result.content[0].text


async def test_every_tool_is_described_flat_and_annotated(settings: Settings) -> None:
    async with Client(server_with(settings)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {
        "create_task",
        "start_run",
        "select_uct",
        "expand_node",
        "compile_and_profile",
        "record_failure",
        "confirm_rule",
        "get_skill_memory",
        "get_node",
        "get_run",
        "best_kernel",
        "finish_run",
    }
    for tool in tools.values():
        assert tool.description and len(tool.description) > 60
        assert "$ref" not in json.dumps(tool.input_schema), tool.name
        assert tool.output_schema is not None and tool.annotations is not None
    assert (
        tools["select_uct"].annotations.read_only_hint and not tools["compile_and_profile"].annotations.read_only_hint
    )


async def test_one_step_and_a_failure_through_the_tools(settings: Settings) -> None:
    progress: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    async with Client(server_with(settings)) as client:
        created = await client.call_tool(
            "create_task", {"source": TASK, "name": "scale_relu"}, progress_callback=on_progress
        )
        task = created.structured_content
        # the task's own code runs while it is checked: progress says so, for clients with idle timeouts
        assert progress[:2] == ["queued", "loading: loading the task in the evaluator's process"], progress
        progress.clear()
        run = await call(client, "start_run", task_id=task["task_id"], seed=3, total_steps=5)
        chosen = await call(client, "select_uct", run_id=run["run_id"])
        assert (chosen["node_id"], chosen["action"]) == (run["root_node_id"], "large")
        context = await call(client, "expand_node", run_id=run["run_id"], node_id=chosen["node_id"], action="large")
        # the task came with start_run's brief, which the step cites
        assert "class Model" in run["brief"] and f"run brief {run['brief_version']} " in context["instructions"]
        result = await client.call_tool(
            "compile_and_profile",
            {"code": "good kernel", "expansion_id": context["expansion_id"]},
            progress_callback=on_progress,
        )
        first = result.structured_content
        assert first["status"] == "ok" and first["is_new_best"] and "the new best" in result.content[0].text
        node = await call(client, "get_node", node_id=first["node_id"])
        assert node["code"] == "good kernel" and node["parent_id"] == run["root_node_id"]
        failed = await call(
            client,
            "compile_and_profile",
            code="wrong kernel",
            run_id=run["run_id"],
            parent_id=first["node_id"],
            action="small",
        )
        assert failed["status"] == "mismatch" and failed["node_id"] is not None
        recorded = await call(
            client,
            "record_failure",
            task_id=task["task_id"],
            node_id=failed["node_id"],
            rule="You cannot skip the bias in the epilogue; add it before the activation.",
        )
        assert recorded["rule"]["occurrences"] == 1 and recorded["merged_by"] == "new"
        memory = await call(client, "get_skill_memory", format="data")
        assert all(r["source"] == "curated" for r in memory["rules"])  # one occurrence is not enough yet
        state = await call(client, "get_run", run_id=run["run_id"])
        assert state["steps_done"] == 2 and state["counts"] == {"ok": 1, "mismatch": 1}
        best = await call(client, "best_kernel", run_id=run["run_id"])
        assert best["code"] == "good kernel" and not best["verified"]
        finished = await call(client, "finish_run", run_id=run["run_id"])
        assert finished["final_node_id"] == first["node_id"]
        assert (await call(client, "best_kernel", run_id=run["run_id"]))["verified"]
    assert progress, "compile_and_profile reported no progress"


async def test_bad_calls_are_tool_errors_that_say_how_to_fix_them_and_the_server_stays_up(settings: Settings) -> None:
    async with Client(server_with(settings)) as client:
        task = await call(client, "create_task", source=TASK)
        run = await call(client, "start_run", task_id=task["task_id"])
        other = await call(client, "start_run", task_id=task["task_id"])
        node = (
            await call(
                client,
                "compile_and_profile",
                code="k",
                run_id=run["run_id"],
                parent_id=run["root_node_id"],
                action="large",
            )
        )["node_id"]
        assert "no run has id 'run-nope'" in await error_of(client, "select_uct", run_id="run-nope")
        assert "no node has id 99999" in await error_of(client, "get_node", node_id=99999)
        assert "node_id" in await error_of(client, "get_node", node_id="not a number")
        assert "must be at most 9223372036854775807" in await error_of(client, "get_node", node_id=2**70)
        assert "seed" in await error_of(client, "start_run", task_id=task["task_id"], seed=2**70)
        assert "code takes a string, not empty" in await error_of(
            client, "compile_and_profile", code="", task_id=task["task_id"]
        )
        assert "takes at most 1000000" in await error_of(
            client, "compile_and_profile", code="x" * 5_000_000, task_id=task["task_id"]
        )
        assert "does not parse" in await error_of(client, "create_task", source="class Model(:\n")
        assert f"belongs to run {run['run_id']}" in await error_of(
            client, "compile_and_profile", code="k", run_id=other["run_id"], parent_id=node, action="small"
        )
        assert "starts with 'You cannot" in await error_of(
            client,
            "record_failure",
            task_id=task["task_id"],
            status="compile_error",
            error_text="e",
            code="x",
            rule="Do better.",
        )
        assert "compile_and_profile takes no argument 'expansionid'" in await error_of(
            client, "compile_and_profile", code="k", task_id=task["task_id"], expansionid=5
        )
        other_task = await call(client, "create_task", source=TASK.replace("+ 1.0", "+ 2.0"))
        assert "is not the task of run" in await error_of(
            client,
            "compile_and_profile",
            code="k",
            task_id=other_task["task_id"],
            run_id=run["run_id"],
            parent_id=node,
            action="large",
        )
        assert "triton must be a version number" in await error_of(client, "get_skill_memory", triton="banana")
        assert "control character" in await error_of(
            client,
            "record_failure",
            task_id=task["task_id"],
            status="compile_error",
            error_text="e",
            code="x",
            rule="You cannot \x00 do that.",
        )
        assert (await call(client, "get_run", run_id=run["run_id"]))["steps_done"] == 1
        # the same task under another name keeps its first name, and says so
        again = await call(client, "create_task", source=TASK, name="another name")
        assert again["task_id"] == task["task_id"] and again["name"] == task["name"]
        # a run's protocol and backend are the caller's to choose, and shown
        chosen = await call(client, "start_run", task_id=task["task_id"], mode="kernelbench", backend="interpret")
        shown = await call(client, "get_run", run_id=chosen["run_id"])
        assert (shown["mode"], shown["backend"]) == ("kernelbench", "interpret")


async def test_a_reproducer_gives_an_imported_rule_its_scope_through_the_server(settings: Settings) -> None:
    store = open_store(settings.database_url)
    import_memory(Services(settings=settings, store=store, evaluator=FakeEvaluator(verdict)), "You cannot x.||5\n")
    (rule,) = [r for r in store.rules() if r.source == "imported"]
    store.close()
    async with Client(server_with(settings)) as client:
        task = await call(client, "create_task", source=TASK, name="scale_relu")
        refused = await error_of(client, "confirm_rule", rule_id=rule.id, task_id=task["task_id"], code="good kernel")
        assert "the reproducer passed" in refused
        confirmed = await call(client, "confirm_rule", rule_id=rule.id, task_id=task["task_id"], code="broken kernel")
        assert confirmed["status"] == "compile_error" and confirmed["injected"], confirmed["message"]
        assert confirmed["rule"]["source"] == "curated" and confirmed["rule"]["scope"].startswith("triton ")
        memory = await call(client, "get_skill_memory", format="data")
        assert rule.id in [r["rule_id"] for r in memory["rules"]]


async def test_resources_and_prompts(settings: Settings) -> None:
    async with Client(server_with(settings)) as client:
        task = await call(client, "create_task", source=TASK)
        run = await call(client, "start_run", task_id=task["task_id"])
        node = (
            await call(
                client,
                "compile_and_profile",
                code="broken kernel",
                run_id=run["run_id"],
                parent_id=run["root_node_id"],
                action="large",
            )
        )["node_id"]
        assert (await client.read_resource(f"task://{task['task_id']}")).contents[0].text == TASK
        assert (await client.read_resource(f"node://{node}/code")).contents[0].text == "broken kernel"
        evaluation = json.loads((await client.read_resource(f"node://{node}/evaluation")).contents[0].text)
        assert evaluation["status"] == "compile_error"
        tree = (await client.read_resource(f"run://{run['run_id']}/tree")).contents[0].text
        assert f"#{node} large" in tree
        assert "You cannot" in (await client.read_resource("memory://current")).contents[0].text
        before = await call(client, "expand_node", run_id=run["run_id"], node_id=node, action="large")
        large = await client.get_prompt("large_step", {"run_id": run["run_id"], "node_id": str(node)})
        text = large.messages[0].content.text
        assert "class Model" in text
        assert f"compile_and_profile (code=<the module>, run_id='{run['run_id']}', parent_id={node}" in text
        # Reading the prompt stored no expansion: the next one gets the next id.
        after = await call(client, "expand_node", run_id=run["run_id"], node_id=node, action="large")
        assert after["expansion_id"] == before["expansion_id"] + 1
        distill = await client.get_prompt("distill_failure", {"node_id": str(node)})
        assert "broken kernel" in distill.messages[0].content.text and "no guidance" in distill.messages[0].content.text
        with pytest.raises(Exception, match="no node has id 4242"):
            await client.read_resource("node://4242/code")


async def refusal(request: Awaitable[object]) -> str:
    """The message of the JSON-RPC error a prompt or resource request is refused with (invalid params)."""
    with pytest.raises(MCPError) as caught:
        await request
    assert caught.value.code == INVALID_PARAMS, caught.value
    return caught.value.message


async def test_bad_prompt_and_resource_requests_are_refused_with_a_message_that_says_why(settings: Settings) -> None:
    async with Client(server_with(settings)) as client:
        task = await call(client, "create_task", source=TASK)
        run = await call(client, "start_run", task_id=task["task_id"])
        root = str(run["root_node_id"])
        assert "no run has id 'nope'" in await refusal(
            client.get_prompt("small_step", {"run_id": "nope", "node_id": "1"})
        )
        assert "node_id must be a node's number" in await refusal(
            client.get_prompt("small_step", {"run_id": run["run_id"], "node_id": "abc"})
        )
        assert "no node has id 4242" in await refusal(
            client.get_prompt("large_step", {"run_id": run["run_id"], "node_id": "4242"})
        )
        assert "no node has id 4242" in await refusal(client.get_prompt("distill_failure", {"node_id": "4242"}))
        huge = str(2**70)  # beyond SQLite's integers: still just an id that names nothing
        assert f"no node has id {huge}" in await refusal(
            client.get_prompt("small_step", {"run_id": run["run_id"], "node_id": huge})
        )
        assert "not 'x'" in await refusal(client.get_prompt("distill_failure", {"node_id": "x"}))
        assert f"node {root} has no evaluation to learn from" in await refusal(
            client.get_prompt("distill_failure", {"node_id": root})
        )
        assert "prompt small_step takes run_id, node_id: node_id missing" in await refusal(
            client.get_prompt("small_step", {"run_id": run["run_id"]})
        )
        assert "node_id missing; nodeid unknown" in await refusal(
            client.get_prompt("large_step", {"run_id": run["run_id"], "nodeid": root})
        )
        assert "there is no prompt 'tiny_step'; the prompts are distill_failure, large_step, small_step" in (
            await refusal(client.get_prompt("tiny_step", {}))
        )
        assert "a node id is a whole number" in await refusal(client.read_resource("node://abc/code"))
        assert "a node id is a whole number" in await refusal(client.read_resource("node://abc/evaluation"))
        assert f"node {root} has no evaluation" in await refusal(client.read_resource(f"node://{root}/evaluation"))
        assert f"node {root} is a run's root" in await refusal(client.read_resource(f"node://{root}/code"))
        assert "memory:// needs a scope" in await refusal(client.read_resource("memory://"))
        assert "no run has id 'nope'" in await refusal(client.read_resource("run://nope/tree"))
        with pytest.raises(MCPError, match=f"no node has id {huge}"):
            await client.read_resource(f"node://{huge}/code")
        # None of it hurt the server.
        assert "class Model" in (await client.read_resource(f"task://{task['task_id']}")).contents[0].text


async def test_a_huge_answer_is_trimmed_and_points_to_the_whole_text(settings: Settings) -> None:
    async with Client(server_with(settings, HugeTraceback(verdict))) as client:
        task = await call(client, "create_task", source=TASK)
        run = await call(client, "start_run", task_id=task["task_id"])
        result = await call(
            client, "compile_and_profile", code="k", run_id=run["run_id"], parent_id=run["root_node_id"], action="large"
        )
        text = json.dumps(result)
        assert len(text) < 80_000
        assert f"node://{result['node_id']}/evaluation" in result["evaluation"]["error"]["traceback"]
        whole = await client.read_resource(f"node://{result['node_id']}/evaluation")
        assert len(json.loads(whole.contents[0].text)["error"]["traceback"]) == len("frame\n" * 60_000)


async def test_arguments_of_the_wrong_json_type_are_refused_not_converted(settings: Settings) -> None:
    async with Client(server_with(settings)) as client:
        task = await call(client, "create_task", source=TASK)
        await call(client, "start_run", task_id=task["task_id"])
        for arguments, fragment in [
            ({"node_id": True}, "node_id must be a whole number such as 12, at least 1 (a node id); not true"),
            ({"node_id": "1.5"}, 'node_id must be a whole number such as 12, at least 1 (a node id); not "1.5"'),
            (
                {"node_id": 1, "include_code": "yes"},
                'include_code must be true or false (include the kernel\'s code); not "yes"',
            ),
        ]:
            assert fragment in await error_of(client, "get_node", **arguments)
        assert (await call(client, "get_node", node_id=1, include_code=False))["node_id"] == 1


async def test_a_passed_node_has_no_failure_to_distill_and_a_failed_evaluator_says_so_in_the_text(
    settings: Settings,
) -> None:
    def infra(code: str, _: int) -> tuple[Status, float | None]:
        return (Status.infra_error, None) if "flaky" in code else verdict(code, 0)

    async with Client(server_with(settings, FakeEvaluator(infra))) as client:
        task = await call(client, "create_task", source=TASK)
        run = await call(client, "start_run", task_id=task["task_id"])
        ok = await call(
            client, "compile_and_profile", code="k", run_id=run["run_id"], parent_id=run["root_node_id"], action="large"
        )
        assert "passed (status ok): nothing failed" in await refusal(
            client.get_prompt("distill_failure", {"node_id": str(ok["node_id"])})
        )
        flaky = await client.call_tool(
            "compile_and_profile",
            {"code": "flaky", "run_id": run["run_id"], "parent_id": run["root_node_id"], "action": "large"},
        )
        assert flaky.structured_content["node_id"] is None
        assert "not added to the tree" in flaky.content[0].text  # the summary says what the result says


async def test_a_step_from_a_long_chain_keeps_its_instructions_whole_and_each_kernel_once(settings: Settings) -> None:
    from adaexplore.config import SearchConfig

    big = "# padding\n" * 1_500  # 15 000 characters a kernel
    chain = settings.model_copy(update={"search": SearchConfig(small_step_limit=10, p_large=0.0)})
    async with Client(server_with(chain)) as client:
        task = await call(client, "create_task", source=TASK)
        run = await call(client, "start_run", task_id=task["task_id"])
        parent = run["root_node_id"]
        for i, action in enumerate(["large", "small", "small", "small", "small"]):
            made = await call(
                client,
                "compile_and_profile",
                code=f"kernel {i}\n{big}",
                run_id=run["run_id"],
                parent_id=parent,
                action=action,
            )
            parent = made["node_id"]
        context = await call(client, "expand_node", run_id=run["run_id"], node_id=parent, action="small")
        assert parent not in [k["node_id"] for k in context["working_memory"]]  # the current kernel comes once
        assert context["current"]["node_id"] == parent and "code" not in context["current"]
        assert context["instructions"].startswith("Improve the current kernel")  # the brief came with start_run
        assert len(json.dumps(context)) < 80_000
        # the earlier kernels are listed by id, their code left to node://ID/code: the instructions stay whole
        assert "trimmed" not in context["instructions"] and "code" not in context["working_memory"][0]
