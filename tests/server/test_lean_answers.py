"""The budgets of what a client reads (issue 27, item 4): tools/list in 20 KB with room to spare, expand_node
carrying each text once (at most 12 K characters for a small or large step on a KernelBench Level 2 task, with the
verdicts the evaluator writes on a CPU machine), get_skill_memory's text once."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from adaexplore.config import Settings
from adaexplore.domain import Audit, Backend, Correctness, Evaluation, KernelCost, Mode, Tolerance, TrialResult
from adaexplore.executor import Status, Task
from adaexplore.executor.pipeline.stages.context import Run
from adaexplore.executor.pipeline.stages.result import ok_message
from adaexplore.server import build_server
from adaexplore.store import open_store
from adaexplore.tools import Services
from tests.fakes import FakeEvaluator, make_evaluation

ROOT = Path(__file__).resolve().parents[2]
LEVEL2 = ROOT.parent / "shared/data/kernelbench/level2/12_Gemm_Multiply_LeakyReLU.py"
KERNEL = (Path(__file__).parent / "data/gemm_multiply_leakyrelu_kernel.py").read_text()
TOOLS_LIST_BUDGET = 20_000
# what the tool list must leave free under its budget, for the next parameter or result field
TOOLS_LIST_HEADROOM = 1_500
STEP_BUDGET = 12_000

pytestmark = pytest.mark.anyio

# The tools and their parameters (required ones first): a change here is a change for every client.
PARAMETERS = {
    "best_kernel": ["run_id"],
    "compile_and_profile": [
        "code",
        "[action]",
        "[backend]",
        "[expansion_id]",
        "[mode]",
        "[parent_id]",
        "[run_id]",
        "[task_id]",
    ],
    "confirm_rule": ["code", "rule_id", "task_id", "[backend]"],
    "create_task": ["[name]", "[path]", "[small_sizes]", "[source]"],
    "expand_node": ["action", "node_id", "run_id"],
    "finish_run": ["run_id"],
    "get_node": ["node_id", "[include_code]"],
    "get_run": ["run_id"],
    "get_skill_memory": ["[backend]", "[format]", "[min_occurrences]", "[min_tasks]", "[triton]"],
    "record_failure": ["task_id", "[code]", "[error_text]", "[node_id]", "[rule]", "[status]"],
    "select_uct": ["run_id"],
    "start_run": ["task_id", "[backend]", "[mode]", "[model]", "[preset]", "[seed]", "[total_steps]"],
}


def ok_verdict(code: str, _: int) -> tuple[Status, float | None]:
    return Status.ok, 1.0 + len(code) % 7 / 10


class CpuEvaluator(FakeEvaluator):
    """Correct verdicts worded as the real evaluator words them on a machine without a GPU (compile, then
    interpret at the small sizes): its own `ok_message`, over a static cost at the small and the full sizes for
    two autotune configs, which differs from kernel to kernel."""

    def __init__(self) -> None:
        super().__init__(ok_verdict)

    async def evaluate(self, task: Task, code: str, options: object = None, *, progress: object = None) -> Evaluation:
        self.calls += 1
        run = Run(task, code, Mode.strict, None)
        run.backends = [Backend.compile, Backend.interpret]
        run.sizes = "small"
        tolerance = Tolerance(
            kind="scaled", atol=1e-4, rtol=1e-4, norm_rtol=2e-5, dtype="float32", reference_dtype="float64"
        )
        run.correctness = Correctness(
            passed=True, trials=[TrialResult(index=i, seed=i, passed=True) for i in range(5)], tolerance=tolerance
        )
        registers = 200 + sum(map(ord, code)) % 97  # the kernels differ in a digit: so do their registers
        run.audit = Audit(
            static_cost=[
                KernelCost(
                    kernel="linear_scale_leaky_kernel",
                    sizes=sizes,
                    config=config,
                    autotuned=True,
                    registers=registers + index,
                    spill_stores=40 if sizes == "full" else 0,
                    shared_memory=(98_304 if sizes == "full" else 16_384) // (index + 1),
                )
                for sizes in ("full", "small")
                for index, config in enumerate(("BLOCK_M=128, BLOCK_N=128", "BLOCK_M=64, BLOCK_N=128"))
            ]
        )
        evaluation = make_evaluation(task, code, Status.ok, None, "strict", (Backend.compile, Backend.interpret))
        return evaluation.model_copy(update={"message": ok_message(run), "audit": run.audit})


def server_with(settings: Settings, evaluator: FakeEvaluator | None = None):  # type: ignore[no-untyped-def]
    @contextlib.asynccontextmanager
    async def services(s: Settings) -> AsyncIterator[Services]:
        store = open_store(s.database_url)
        try:
            yield Services(settings=s, store=store, evaluator=evaluator or FakeEvaluator(ok_verdict))
        finally:
            store.close()

    return build_server(settings, services=services)


def once(text: str, answer: str) -> int:
    """How often `text` occurs in an answer's JSON."""
    return answer.count(json.dumps(text, ensure_ascii=False)[1:-1])


async def call(client: Client, tool: str, **arguments: object) -> tuple[str, dict]:
    """The summary text and the structured content of a call that must succeed."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return result.content[0].text, result.structured_content


async def test_the_tool_list_fits_its_budget_and_names_the_reviewed_parameters(tmp_path: Path) -> None:
    async with Client(server_with(Settings(home=tmp_path))) as client:
        listed = await client.list_tools()
    wire = listed.model_dump_json(by_alias=True, exclude_none=True)
    room = TOOLS_LIST_BUDGET - TOOLS_LIST_HEADROOM
    assert len(wire) <= room, f"tools/list is {len(wire)} characters, over {room} ({TOOLS_LIST_BUDGET} less headroom)"
    seen = {}
    for tool in listed.tools:
        required = tool.input_schema.get("required", [])
        optional = sorted(f"[{name}]" for name in tool.input_schema["properties"] if name not in required)
        seen[tool.name] = sorted(required) + optional
        assert "\n" not in tool.description and "  " not in tool.description, tool.name
        # every optional integer is a plain integer, so a client that types its fields can fill it in
        for name, spec in tool.input_schema["properties"].items():
            assert "anyOf" not in spec and "title" not in spec, (tool.name, name, spec)
        # a large object of a result (an evaluation, the search settings) is listed as an object, and its
        # description says what it holds
        for name, spec in (tool.output_schema or {}).get("properties", {}).items():
            for option in spec.get("anyOf", [spec]):
                types = option.get("type") if isinstance(option.get("type"), list) else [option.get("type")]
                if "object" in types and not option.get("properties") and "additionalProperties" not in option:
                    assert len(spec.get("description", "")) > 40, (tool.name, name, spec)
    assert seen == PARAMETERS


@pytest.mark.skipif(not LEVEL2.is_file(), reason="the KernelBench data (../shared/data/kernelbench) is not here")
async def test_a_step_on_a_level2_task_carries_each_text_once_within_its_budget(tmp_path: Path) -> None:
    """A line of five kernels (the most a small step shows: memory_rounds is 5), each with the verdict the
    evaluator writes on a CPU machine (its static cost clause included): every small step along the line, and
    a large step from its end, fit the budget and carry each kernel, verdict and rule once."""
    task_source = LEVEL2.read_text()
    kernels = [KERNEL] + [KERNEL.replace("num_stages=3", f"num_stages={n}") for n in (2, 4, 5, 1)]
    settings = Settings(home=tmp_path)
    assert settings.search.memory_rounds == len(kernels)
    async with Client(server_with(settings, CpuEvaluator())) as client:
        _, task = await call(client, "create_task", source=task_source, name="gemm_multiply_leakyrelu")
        _, run = await call(client, "start_run", task_id=task["task_id"], seed=1)
        _, memory = await call(client, "get_skill_memory")
        skill = memory["prompt"]
        assert skill and len(skill) > 1_000  # the starter memory is injected: start_run gives it, the steps cite it
        assert once(skill, json.dumps(run)) == 1 and once(task_source, json.dumps(run)) == 1
        citation = f"run brief {run['brief_version']} "
        parent, action, line = run["root_node_id"], "large", []
        for code in kernels:
            _, made = await call(
                client, "compile_and_profile", code=code, run_id=run["run_id"], parent_id=parent, action=action
            )
            assert made["status"] == "ok" and "static cost linear_scale_leaky_kernel at full sizes" in made["message"]
            assert "compiles for sm_90 at the small sizes" in made["message"]  # the evaluator's words, whole
            parent, action = made["node_id"], "small"
            line.append((made["node_id"], code, made["message"]))

            summary, small = await call(client, "expand_node", run_id=run["run_id"], node_id=parent, action="small")
            answer = summary + json.dumps(small, ensure_ascii=False)
            assert len(answer) <= STEP_BUDGET, f"a small step after {len(line)} kernels is {len(answer)} characters"
            assert once(skill, answer) == 0 and citation in small["instructions"]
            assert small["brief_version"] == run["brief_version"]
            assert once(code, answer) == 1  # the kernel to edit, once
            for earlier in {c for _, c, _ in line[:-1]} - {code}:
                assert once(earlier, answer) == 0  # the earlier kernels: their verdicts, not their code
            # the kernels by id and status: their verdicts are in the instructions
            assert small["current"] == {"node_id": parent, "status": "ok"}
            assert small["working_memory"] == [{"node_id": n, "status": "ok"} for n, _, _ in line[:-1]]
            # each verdict once: the current kernel's whole (less where it was compiled, which its static cost
            # and the task's SMALL_SIZES say), the earlier ones without what it says for all of them
            for node_id, _, message in line:
                cost = next(c for c in message.split("; ") if c.startswith("static cost "))
                assert once(cost, answer) == 1, (node_id, cost)
            assert answer.count("no GPU timed it here") == 1
            assert answer.count("in the interpreter at small sizes") == 1
            assert "compiles for sm_90 at" not in answer
            assert once(task_source, answer) == 0  # the brief holds the task

        summary, large = await call(client, "expand_node", run_id=run["run_id"], node_id=parent, action="large")
        answer = summary + json.dumps(large, ensure_ascii=False)
        assert len(answer) <= STEP_BUDGET, f"a large step is {len(answer)} characters"
        assert once(skill, answer) == 0 and citation in large["instructions"]
        assert large["pool"], "a large step from a correct line has that line's best kernel in its pool"
        codes = {node_id: code for node_id, code, _ in line}
        messages = {node_id: message for node_id, _, message in line}
        for kernel in large["pool"]:
            assert once(codes[kernel["node_id"]], answer) == 1, kernel["node_id"]
            assert set(kernel) == {"node_id", "status"}
            cost = next(c for c in messages[kernel["node_id"]].split("; ") if c.startswith("static cost "))
            assert once(cost, answer) == 1


async def test_the_skill_memory_comes_once_and_its_counts_on_request(tmp_path: Path) -> None:
    async with Client(server_with(Settings(home=tmp_path))) as client:
        result = await client.call_tool("get_skill_memory", {})
        prompt = result.structured_content["prompt"]
        first_rule = prompt.splitlines()[1][2:]  # "- You cannot …"
        whole = result.content[0].text + json.dumps(result.structured_content, ensure_ascii=False)
        assert first_rule.startswith("You cannot") and whole.count(first_rule) == 1
        assert result.structured_content["rules"] == []
        _, data = await call(client, "get_skill_memory", format="data")
        assert first_rule in [rule["text"] for rule in data["rules"]] and data["prompt"] is None


GPU_TRUTH = ROOT.parent / "shared/data/gpu-truth/level2"
KERNELBENCH2 = ROOT.parent / "shared/data/kernelbench/level2"
# the median answer and the largest, over the steps of a search on each problem of the corpus
STEP_MEDIAN = 6_000


@pytest.mark.skipif(not GPU_TRUTH.is_dir(), reason="the GPU-truth corpus (../shared/data/gpu-truth) is not here")
async def test_steps_of_searches_on_the_level2_corpus_stay_lean(tmp_path: Path) -> None:
    """Twelve steps on each Level 2 problem of the corpus, as select_uct chooses them, each written with the
    kernels assistants wrote for that problem: the median expand_node answer is at most 6 K characters and none
    is over 12 K; the skill memory comes with start_run, and a step gives it again only after it changed."""
    sizes: list[int] = []
    settings = Settings(home=tmp_path)
    async with Client(server_with(settings, CpuEvaluator())) as client:
        for folder in sorted(GPU_TRUTH.iterdir(), key=lambda p: int(p.name)):
            task_file = next(KERNELBENCH2.glob(f"{folder.name}_*.py"))
            kernels = [p.read_text() for p in sorted(folder.glob("*.py"))]
            _, task = await call(client, "create_task", source=task_file.read_text(), name=task_file.stem)
            _, run = await call(client, "start_run", task_id=task["task_id"], seed=3, total_steps=12)
            version = run["brief_version"]
            for step in range(12):
                _, chosen = await call(client, "select_uct", run_id=run["run_id"])
                summary, answer = await call(
                    client, "expand_node", run_id=run["run_id"], node_id=chosen["node_id"], action=chosen["action"]
                )
                size = len(summary + json.dumps(answer, ensure_ascii=False))
                assert size <= STEP_BUDGET, f"{folder.name}, step {step}: {size} characters"
                assert answer["brief_version"] == version and f"run brief {version} " in answer["instructions"]
                assert "Rules learned from earlier failures" not in answer["instructions"]
                assert "## The task" not in answer["instructions"] and "## Rules" not in answer["instructions"]
                sizes.append(size)
                await call(
                    client,
                    "compile_and_profile",
                    code=kernels[step % len(kernels)],
                    expansion_id=answer["expansion_id"],
                )
    sizes.sort()
    median = sizes[len(sizes) // 2]
    assert median <= STEP_MEDIAN, f"the median step answer is {median} characters (largest {sizes[-1]})"


@pytest.mark.skipif(not LEVEL2.is_file(), reason="the KernelBench data (../shared/data/kernelbench) is not here")
async def test_a_kernels_verdict_comes_once_and_its_whole_record_one_call_away(tmp_path: Path) -> None:
    """compile_and_profile's answer carries the verdict once (in `message`; not in the line beside it, nor again in
    its evaluation), and the node's evaluation resource holds the whole record."""
    async with Client(server_with(Settings(home=tmp_path), CpuEvaluator())) as client:
        _, task = await call(client, "create_task", source=LEVEL2.read_text(), name="gemm_multiply_leakyrelu")
        _, run = await call(client, "start_run", task_id=task["task_id"], seed=1)
        summary, made = await call(
            client,
            "compile_and_profile",
            code=KERNEL,
            run_id=run["run_id"],
            parent_id=run["root_node_id"],
            action="large",
        )
        verdict = made["message"]
        assert "static cost linear_scale_leaky_kernel at full sizes" in verdict
        whole = summary + json.dumps(made, ensure_ascii=False)
        cost = next(c for c in verdict.split("; ") if c.startswith("static cost "))
        assert once(cost, whole) == 1 and whole.count("no GPU timed it here") == 1
        assert (
            summary
            == f"ok; added as node {made['node_id']} (the new best); the verdict is `message`; the whole "
            + (f"record: node://{made['node_id']}/evaluation")
        )
        assert made["evaluation"]["message"] == "" and made["evaluation"]["audit"]["static_cost"]
        record = await client.read_resource(f"node://{made['node_id']}/evaluation")
        stored = json.loads(record.contents[0].text)  # type: ignore[union-attr]
        assert stored["message"] in verdict and cost in stored["message"]
