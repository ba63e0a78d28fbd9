"""Rules keep their words (issue 40): a sentence more specific than the rule its signature matches is kept as its
own rule, a timeout makes no rule unless its sentence names a Triton mistake, and format="data" lists the rules the
prompt shows. On real SQLite (and PostgreSQL) stores, with the starter memory where it matters."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from adaexplore.config import MemoryConfig, Settings
from adaexplore.executor import Evaluation, Status
from adaexplore.memory import RuleCandidate, constructs, load_starter, more_specific, names_triton_mistake
from adaexplore.server import build_server
from adaexplore.store import open_store
from adaexplore.tools import (
    CompileAndProfileRequest,
    CreateTaskRequest,
    GetSkillMemoryRequest,
    RecordFailureRequest,
    Services,
    StartRunRequest,
    compile_and_profile,
    create_task,
    get_skill_memory,
    record_failure,
    start_run,
)
from tests.conftest import Databases
from tests.fakes import FakeEvaluator, by_hash

ROOT = Path(__file__).resolve().parents[2]
CORPUS = {c["case"]: c for c in json.loads((Path(__file__).parent / "data" / "failure_corpus.json").read_text())}

pytestmark = pytest.mark.anyio

# Triton 3.6's error for tiles that need more shared memory than the GPU has: the signature of the starter
# memory's generic shared-memory rule, whatever made the kernel need that much.
KERNEL = "import triton\n@triton.jit\ndef _matmul_flat(a, b):\n    pass\n"
OUT_OF_SHARED_MEMORY = """Traceback (most recent call last):
  File "/tmp/candidate.py", line 40, in forward
    _matmul_flat[grid](a, b)
  File "/venv/triton/runtime/jit.py", line 419, in run
    kernel = self.compile(src)
triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 335872, Hardware limit: 232448 \
(kernel _matmul_flat). Reducing block sizes or num_stages may help."""
FLATTEN = (
    "You cannot wrap a matmul's K loop in tl.range(flatten=True) when it has an epilogue: the epilogue buffer "
    "stays alive, 327 KB of shared memory."
)
# The evaluator's words when a candidate runs past its budget (executor/pipeline/stages/budget.py).
BUDGET_RAN_OUT = (
    "trial 1 of 5 was still running when the kernel's budget of 40 s (over all its phases: loading, trials and "
    "timing) ran out, after 38.2 s in this phase, and was killed; it was at line 20 of the candidate, in forward: "
    "`while True:`. Look for a loop that never ends or a wait on another program"
)


def services(databases: Databases, home: Path, *, starter: bool, **memory: object) -> Services:
    settings = databases.settings(home, memory=MemoryConfig(**memory))
    svc = Services(settings=settings, store=open_store(settings.database_url), evaluator=FakeEvaluator(by_hash))
    if not starter:
        svc.store.meta_set("starter_memory", "0")
    return svc


@pytest.fixture
def svc(databases: Databases, tmp_path: Path) -> Services:
    """A memory with the starter rules in it, as every new home has."""
    return services(databases, tmp_path, starter=True)


@pytest.fixture
def empty(databases: Databases, tmp_path: Path) -> Services:
    return services(databases, tmp_path, starter=False)


def tasks(svc: Services) -> tuple[str, str]:
    a = create_task(svc, CreateTaskRequest(path=str(ROOT / "tests/executor/data/scale_relu_task.py")))
    b = create_task(svc, CreateTaskRequest(path=str(ROOT / "examples/tasks/elementwise_chain.py")))
    return a.task_id, b.task_id


def out_of_shared_memory(task_id: str, rule: str | None = None) -> RecordFailureRequest:
    return RecordFailureRequest(
        task_id=task_id,
        status="compile_error",
        error_type="OutOfResources",
        error_text=OUT_OF_SHARED_MEMORY,
        code=KERNEL,
        rule=rule,
    )


def rows(svc: Services, table: str) -> int:
    return svc.store._db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


def prompt_rules(prompt: str | None) -> list[str]:
    return [line[2:] for line in (prompt or "").splitlines() if line.startswith("- ")]


# ---- a sentence more specific than its signature's rule ----------------------------------------------------------
async def test_a_sentence_more_specific_than_its_signatures_rule_is_kept_as_its_own_rule(svc: Services) -> None:
    a, b = tasks(svc)
    first = await record_failure(svc, out_of_shared_memory(a, FLATTEN))
    general = svc.store.rule_for_signature(first.signature or "")
    assert general is not None and general.source == "curated" and "shared memory" in general.text
    assert first.merged_by == "new" and first.rule is not None and first.rule.text == FLATTEN
    kept = first.rule.rule_id
    assert kept != general.id
    assert f"kept as its own rule {kept} (new), more specific than rule {general.id}" in first.message
    assert "it names flatten, tl.range" in first.message and f"rule {general.id} is counted too" in first.message
    # The mistake the general rule names was seen again, and its signature stays its own.
    assert (general.occurrences, general.tasks) == (1, 1)
    assert svc.store.rule(kept).signatures == [] and first.signature in general.signatures

    # Words like the kept sentence's, in another task: the kept rule again, not a third one.
    alike = (
        "You cannot wrap a matmul's K loop in tl.range(flatten=True) when it has an epilogue: its buffer stays "
        "alive in shared memory."
    )
    second = await record_failure(svc, out_of_shared_memory(b, alike))
    assert second.merged_by == "similarity" and second.rule is not None and second.rule.rule_id == kept
    assert (second.rule.occurrences, second.rule.tasks) == (2, 2)
    # No sentence: the rule of the signature.
    bare = await record_failure(svc, out_of_shared_memory(a))
    assert bare.merged_by == "signature" and bare.rule is not None and bare.rule.rule_id == general.id
    # A sentence that names no code the general rule lacks says nothing it does not: counted there, and told so.
    vague = "You cannot ask for more shared memory than the GPU has."
    reworded = await record_failure(svc, out_of_shared_memory(b, vague))
    assert reworded.merged_by == "signature" and reworded.rule is not None and reworded.rule.rule_id == general.id
    assert f"names no code that rule {general.id}'s sentence" in reworded.message
    assert svc.store.rule_with_text(vague) is None
    assert svc.store.rule(general.id).occurrences == 4 and svc.store.rule(kept).occurrences == 2

    # Seen three times in two tasks, the kept rule is put into prompts beside the general one, and listed alike.
    third = await record_failure(svc, out_of_shared_memory(a, FLATTEN))
    assert third.rule is not None and third.rule.rule_id == kept and third.injected
    prompt = prompt_rules(get_skill_memory(svc, GetSkillMemoryRequest()).prompt)
    data = [r.text for r in get_skill_memory(svc, GetSkillMemoryRequest(format="data")).rules]
    assert FLATTEN in prompt and general.text in prompt and data == prompt


async def test_a_more_specific_sentence_that_reads_like_another_rule_joins_that_rule(svc: Services) -> None:
    a, b = tasks(svc)
    # The same cause met first with another error (its own signature), and its sentence kept there.
    other = await record_failure(
        svc,
        RecordFailureRequest(
            task_id=a,
            status="runtime_error",
            error_type="RuntimeError",
            error_text="RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered",
            code=KERNEL,
            rule=FLATTEN,
        ),
    )
    assert other.merged_by == "new" and other.rule is not None
    alike = (
        "You cannot wrap a matmul's K loop in tl.range(flatten=True) when it has an epilogue: its buffer stays "
        "alive in shared memory."
    )
    before = rows(svc, "rules")
    result = await record_failure(svc, out_of_shared_memory(b, alike))
    general = svc.store.rule_for_signature(result.signature or "")
    assert general is not None and general.id != other.rule.rule_id and general.occurrences == 1
    assert result.merged_by == "similarity" and result.rule is not None and result.rule.rule_id == other.rule.rule_id
    assert f"more specific than rule {general.id}" in result.message
    assert rows(svc, "rules") == before and (result.rule.occurrences, result.rule.tasks) == (2, 2)


class Judge:
    def __init__(self, answer: str | None) -> None:
        self.answer = answer
        self.asked: list[list[RuleCandidate]] = []

    async def same_rule(self, text: str, candidates: list[RuleCandidate]) -> int | None:
        self.asked.append(candidates)
        return candidates[0].rule_id if self.answer == "same" else None


@pytest.mark.parametrize("answer", ["same", None])
async def test_a_model_judge_decides_whether_a_sentence_close_to_the_signatures_rule_is_that_rule(
    databases: Databases, tmp_path: Path, answer: str | None
) -> None:
    svc = services(databases, tmp_path, starter=True)
    svc.judge = judge = Judge(answer)
    a, _ = tasks(svc)
    # between the judge's floor and the similarity threshold of the starter rule, and naming triton.Config
    close = (
        "You cannot use tiles and num_stages needing more shared memory than the H100 has; pass num_stages=2 to "
        "triton.Config instead."
    )
    result = await record_failure(svc, out_of_shared_memory(a, close))
    general = svc.store.rule_for_signature(result.signature or "")
    assert general is not None and result.rule is not None
    assert [[c.rule_id for c in asked] for asked in judge.asked] == [[general.id]]
    if answer == "same":
        assert result.merged_by == "judge" and result.rule.rule_id == general.id
        assert svc.store.rule_with_text(close) is None
    else:
        assert result.merged_by == "new" and result.rule.text == close and result.rule.rule_id != general.id


async def test_a_retired_rule_keeps_its_mistake_even_from_a_more_specific_sentence(svc: Services) -> None:
    a, _ = tasks(svc)
    first = await record_failure(svc, out_of_shared_memory(a))
    assert first.rule is not None
    svc.store.set_rule_status(first.rule.rule_id, "retired")
    before = rows(svc, "rules")
    result = await record_failure(svc, out_of_shared_memory(a, FLATTEN))
    assert result.merged_by == "signature" and result.rule is not None and result.rule.rule_id == first.rule.rule_id
    assert "is retired, and a retired mistake starts no second rule" in result.message
    assert rows(svc, "rules") == before


# ---- timeouts and budget overruns ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "sentence",
    [
        "You cannot run past the 40 s call budget; keep the work small.",
        "You cannot take longer than the time limit of a trial.",
        "You cannot exceed executor.call_budget_s.",
    ],
)
async def test_a_timeout_whose_sentence_is_about_its_budget_makes_no_rule(empty: Services, sentence: str) -> None:
    a, b = tasks(empty)
    hang = Evaluation.model_validate(CORPUS["example/layernorm/hang"]["evaluation"])
    requests = [
        RecordFailureRequest(task_id=a, status="timeout", error_text=BUDGET_RAN_OUT, code="x", rule=sentence),
        RecordFailureRequest(task_id=b, evaluation=hang, code=CORPUS["example/layernorm/hang"]["code"], rule=sentence),
    ]
    for request in requests:
        result = await record_failure(empty, request)
        assert result.rule is None and result.merged_by == "none" and result.failure_id is not None
        assert "made no rule: a timeout" in result.message and "names the Triton mistake" in result.message
    assert rows(empty, "rules") == 0 and rows(empty, "failures") == 2


async def test_a_timeout_whose_sentence_names_a_triton_mistake_makes_a_rule(empty: Services) -> None:
    a, _ = tasks(empty)
    sentence = "You cannot spin in a while loop on a flag another program sets; programs are not scheduled together."
    result = await record_failure(
        empty, RecordFailureRequest(task_id=a, status="timeout", error_text=BUDGET_RAN_OUT, code="x", rule=sentence)
    )
    assert result.merged_by == "new" and result.rule is not None and result.rule.text == sentence
    assert rows(empty, "rule_signatures") == 0  # a timeout is never a rule's signature


async def test_a_nodes_timeout_takes_a_triton_rule_after_a_budget_sentence_and_counts_once(empty: Services) -> None:
    empty.evaluator = FakeEvaluator(lambda code, _: (Status.timeout, None))
    task_id, _ = tasks(empty)
    run = start_run(empty, StartRunRequest(task_id=task_id, seed=1))
    made = await compile_and_profile(
        empty, CompileAndProfileRequest(code="k", run_id=run.run_id, parent_id=run.root_node_id, action="large")
    )
    assert made.node_id is not None
    budget = await record_failure(
        empty, RecordFailureRequest(task_id=task_id, node_id=made.node_id, rule="You cannot run out of time.")
    )
    assert budget.rule is None and "made no rule" in budget.message
    again = await record_failure(
        empty, RecordFailureRequest(task_id=task_id, node_id=made.node_id, rule="You cannot run out of time.")
    )
    assert (
        again.failure_id == budget.failure_id
        and "recorded already" in again.message
        and "made no rule" in again.message
    )
    loop = "You cannot loop until a value in global memory changes; no other program writes it while you wait."
    ruled = await record_failure(empty, RecordFailureRequest(task_id=task_id, node_id=made.node_id, rule=loop))
    assert ruled.failure_id == budget.failure_id and ruled.rule is not None and ruled.rule.text == loop
    assert ruled.rule.occurrences == 1 and rows(empty, "failures") == 1


# ---- the data and the prompt list the same rules ------------------------------------------------------------------
@pytest.mark.parametrize(
    "scope",
    [{}, {"backend": "interpret"}, {"backend": "compile"}, {"min_occurrences": 1, "min_tasks": 1}, {"triton": "3.6"}],
)
async def test_the_data_lists_the_rules_the_prompt_shows(svc: Services, scope: dict[str, object]) -> None:
    data = get_skill_memory(svc, GetSkillMemoryRequest(format="data", **scope))  # type: ignore[arg-type]
    prompt = get_skill_memory(svc, GetSkillMemoryRequest(**scope)).prompt  # type: ignore[arg-type]
    assert data.rules and [r.text for r in data.rules] == prompt_rules(prompt)
    if not scope:
        assert len(data.rules) == len(load_starter())


def _server(settings: Settings):  # type: ignore[no-untyped-def]
    @contextlib.asynccontextmanager
    async def made(s: Settings) -> AsyncIterator[Services]:
        store = open_store(s.database_url)
        try:
            yield Services(settings=s, store=store, evaluator=FakeEvaluator(by_hash))
        finally:
            store.close()

    return build_server(settings, services=made)


async def test_over_mcp_the_data_lists_the_rules_the_prompt_shows_and_the_prompt_answer_says_so(
    tmp_path: Path,
) -> None:
    async with Client(_server(Settings(home=tmp_path))) as client:
        prompt = await client.call_tool("get_skill_memory", {})
        data = await client.call_tool("get_skill_memory", {"format": "data"})
    shown = prompt_rules(prompt.structured_content["prompt"])
    assert shown and [r["text"] for r in data.structured_content["rules"]] == shown
    # the prompt answer leaves `rules` empty (its text comes once) and says where the list is
    assert prompt.structured_content["rules"] == []
    assert prompt.content[0].text.startswith(f"{len(shown)} rules for Triton ")
    assert "format='data' lists the same rules" in prompt.content[0].text
    assert data.content[0].text.startswith(f"{len(shown)} rules for Triton ")


# ---- the words themselves -----------------------------------------------------------------------------------------
def test_the_code_a_rule_names() -> None:
    assert constructs(FLATTEN) == {"tl.range", "flatten"}
    assert constructs("You cannot use `break` in a @triton.jit loop (e.g. with BLOCK_K).") == {
        "break",
        "triton.jit",
        "block_k",
    }
    assert constructs("You cannot ask for more shared memory than the GPU has.") == set()
    general = "You cannot use tiles and num_stages needing more shared memory than the GPU has."
    assert more_specific(FLATTEN, general) and not more_specific("You cannot raise num_stages too far.", general)


@pytest.mark.parametrize(
    ("sentence", "triton"),
    [
        ("You cannot run past the 40 s call budget.", False),
        ("You cannot take longer than 8 seconds per trial.", False),
        ("You cannot exceed executor.call_budget_s.", False),
        ("You cannot loop on a value never updated.", True),
        ("You cannot spin on a global counter waiting for other programs.", True),
        ("You cannot take a lock with tl.atomic_cas and wait for it.", True),
        ("You cannot launch a grid of one program per element on the interpreter.", True),
    ],
)
def test_whether_a_sentence_names_a_triton_mistake(sentence: str, triton: bool) -> None:
    assert names_triton_mistake(sentence) is triton
