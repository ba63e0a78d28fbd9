"""record_failure, get_skill_memory, export and import, on a real SQLite file with real failure texts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adaexplore.config import MemoryConfig, Settings
from adaexplore.errors import RequestError
from adaexplore.executor import Evaluation
from adaexplore.memory import RuleCandidate
from adaexplore.store import open_store
from adaexplore.tools import (
    CreateTaskRequest,
    GetSkillMemoryRequest,
    RecordFailureRequest,
    Services,
    create_task,
    export_memory,
    get_skill_memory,
    import_memory,
    record_failure,
)
from tests.fakes import FakeEvaluator, by_hash

ROOT = Path(__file__).resolve().parents[2]
CORPUS = {c["case"]: c for c in json.loads((Path(__file__).parent / "data" / "failure_corpus.json").read_text())}

pytestmark = pytest.mark.anyio


def make_services(tmp_path: Path, **memory: object) -> Services:
    settings = Settings(home=tmp_path, memory=MemoryConfig(**memory))  # type: ignore[arg-type]
    svc = Services(settings=settings, store=open_store(settings.database_url), evaluator=FakeEvaluator(by_hash))
    svc.store.meta_set("starter_memory", "0")  # these tests start from an empty memory
    return svc


@pytest.fixture
def svc(tmp_path: Path) -> Services:
    return make_services(tmp_path)


def tasks(svc: Services) -> tuple[str, str]:
    a = create_task(svc, CreateTaskRequest(path=str(ROOT / "tests/executor/data/scale_relu_task.py")))
    b = create_task(svc, CreateTaskRequest(path=str(ROOT / "examples/tasks/elementwise_chain.py")))
    return a.task_id, b.task_id


def failure(case: str, task_id: str, rule: str | None = None) -> RecordFailureRequest:
    entry = CORPUS[case]
    return RecordFailureRequest(
        task_id=task_id, evaluation=Evaluation.model_validate(entry["evaluation"]), code=entry["code"], rule=rule
    )


def rows(svc: Services, table: str) -> int:
    return svc.store._db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


BREAK_RULE = "You cannot use break inside a @triton.jit kernel loop; bound the loop and mask the body instead."


async def test_the_same_signature_lands_on_the_same_rule_across_tasks(svc: Services) -> None:
    a, b = tasks(svc)
    first = await record_failure(svc, failure("mistake/break/scale_relu", a, BREAK_RULE))
    assert first.merged_by == "new" and first.rule is not None
    second = await record_failure(svc, failure("mistake/break/elementwise_chain", b))
    assert second.merged_by == "signature" and second.rule is not None
    assert second.rule.rule_id == first.rule.rule_id
    assert (second.rule.occurrences, second.rule.tasks) == (2, 2)


async def test_similar_text_merges_a_new_signature_into_an_existing_rule(svc: Services) -> None:
    a, _ = tasks(svc)
    first = await record_failure(svc, failure("mistake/break/scale_relu", a, BREAK_RULE))
    similar = "You cannot use continue inside a @triton.jit kernel loop; bound the loop and mask the body instead."
    second = await record_failure(svc, failure("mistake/continue/scale_relu", a, similar))
    assert second.merged_by == "similarity" and second.rule and first.rule
    assert second.rule.rule_id == first.rule.rule_id
    third = await record_failure(svc, failure("mistake/continue/elementwise_chain", a))
    assert third.merged_by == "signature"  # the continue signature now belongs to the rule too


class Judge:
    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.asked: list[tuple[str, list[RuleCandidate]]] = []

    async def same_rule(self, text: str, candidates: list[RuleCandidate]) -> int | None:
        self.asked.append((text, candidates))
        return candidates[0].rule_id if self.answer else None


@pytest.mark.parametrize("answer", [True, False])
async def test_a_model_judge_decides_between_the_floor_and_the_threshold(svc: Services, answer: bool) -> None:
    svc.judge = Judge(answer)
    a, _ = tasks(svc)
    first = await record_failure(svc, failure("mistake/break/scale_relu", a, BREAK_RULE))
    loosely = "You cannot write a lambda in a @triton.jit kernel; bound the loop and mask it."  # Jaccard 0.5
    second = await record_failure(svc, failure("mistake/lambda/scale_relu", a, loosely))
    assert len(svc.judge.asked) == 1
    assert svc.judge.asked[0][1][0].rule_id == first.rule.rule_id
    assert second.merged_by == ("judge" if answer else "new")
    assert (second.rule.rule_id == first.rule.rule_id) is answer


async def test_without_a_judge_a_loosely_similar_rule_is_a_new_rule(svc: Services) -> None:
    a, _ = tasks(svc)
    await record_failure(svc, failure("mistake/break/scale_relu", a, BREAK_RULE))
    loosely = "You cannot write a lambda in a @triton.jit kernel; bound the loop and mask it."  # Jaccard 0.5
    assert (await record_failure(svc, failure("mistake/lambda/scale_relu", a, loosely))).merged_by == "new"


async def test_a_rule_is_injected_at_three_occurrences_in_two_tasks(svc: Services) -> None:
    a, b = tasks(svc)
    results = [await record_failure(svc, failure("mistake/break/scale_relu", a, BREAK_RULE)) for _ in range(3)]
    assert [r.injected for r in results] == [False, False, False]
    assert get_skill_memory(svc, GetSkillMemoryRequest(format="data")).rules == []
    fourth = await record_failure(svc, failure("mistake/break/elementwise_chain", b))
    assert fourth.injected
    memory = get_skill_memory(svc, GetSkillMemoryRequest())
    assert [r.text for r in memory.rules] == [BREAK_RULE]
    assert BREAK_RULE in (memory.prompt or "")
    assert get_skill_memory(svc, GetSkillMemoryRequest(min_occurrences=5, format="data")).rules == []


async def test_the_paper_preset_counts_occurrences_only(tmp_path: Path) -> None:
    svc = make_services(tmp_path, preset="paper")
    a, _ = tasks(svc)
    results = [await record_failure(svc, failure("mistake/break/scale_relu", a, BREAK_RULE)) for _ in range(3)]
    assert [r.injected for r in results] == [False, False, True]


async def test_a_rule_holds_only_for_the_triton_it_was_seen_with(svc: Services) -> None:
    a, b = tasks(svc)
    for case, task in [("mistake/break/scale_relu", a)] * 2 + [("mistake/break/elementwise_chain", b)]:
        await record_failure(svc, failure(case, task, BREAK_RULE))
    seen_with = CORPUS["mistake/break/scale_relu"]["evaluation"]["provenance"]["triton"]
    assert [r.text for r in get_skill_memory(svc, GetSkillMemoryRequest(triton=seen_with)).rules] == [BREAK_RULE]
    assert get_skill_memory(svc, GetSkillMemoryRequest(triton="99.0.0")).rules == []


async def test_an_infrastructure_failure_never_makes_or_counts_toward_a_rule(svc: Services) -> None:
    a, _ = tasks(svc)
    result = await record_failure(
        svc, RecordFailureRequest(task_id=a, status="infra_error", error_text="judge died", code="x", rule=BREAK_RULE)
    )
    assert result.failure_id is None and result.rule is None and "never make or count" in result.message
    assert rows(svc, "failures") == 0 and rows(svc, "rules") == 0


async def test_bad_input_is_refused_and_the_memory_stays_as_it_was(svc: Services) -> None:
    a, _ = tasks(svc)
    await record_failure(svc, failure("mistake/break/scale_relu", a, BREAK_RULE))
    before = {t: rows(svc, t) for t in ("rules", "failures", "rule_signatures", "rule_tasks")}
    bad = [
        (RecordFailureRequest(task_id=a, status="compile_error", error_text="   ", code="x"), "no error text"),
        (failure("mistake/break/scale_relu", a, "Never use break in kernels."), "starts with 'You cannot"),
        (RecordFailureRequest(task_id=a, status="compile_error", error_text="e", code="x", node_id=1), "one way"),
        (RecordFailureRequest(task_id=a, status="broken", error_text="e", code="x"), "is not a verdict"),
        (RecordFailureRequest(task_id=a, status="ok", error_text="e", code="x"), "nothing failed"),
    ]
    for request, fragment in bad:
        with pytest.raises(RequestError, match=fragment):
            await record_failure(svc, request)
    assert {t: rows(svc, t) for t in before} == before


async def test_a_huge_traceback_is_stored_whole_and_its_signature_stays_short(svc: Services) -> None:
    a, _ = tasks(svc)
    text = "RuntimeError: boom\n" + '  File "x.py", line 1, in f\n' * 40_000
    result = await record_failure(
        svc,
        RecordFailureRequest(
            task_id=a,
            status="runtime_error",
            error_type="RuntimeError",
            error_text=text,
            code="x = 1",
            rule="You cannot boom; do not boom.",
        ),
    )
    stored = svc.store.failures()[0]
    assert len(stored.error_text) == len(text) > 1_000_000
    assert result.signature_key is not None and len(result.signature_key) < 600


async def test_no_guidance_records_the_failure_without_a_rule(svc: Services) -> None:
    a, _ = tasks(svc)
    result = await record_failure(svc, failure("mistake/lambda/scale_relu", a, "no guidance"))
    assert result.rule is None and result.failure_id is not None
    assert rows(svc, "rules") == 0


async def test_the_authors_rule_count_format_imports_as_is(svc: Services) -> None:
    text = (
        "You cannot use tl.tanh; write it with tl.exp.||12\n"
        "You cannot index a tensor with a Python list inside a kernel.||4\n"
        "Prefer float32 accumulators.||1\n"
    )
    assert import_memory(svc, text) == (3, 0)
    rules = svc.store.rules()
    assert {r.source for r in rules} == {"imported"} and not any(r.scope_known for r in rules)
    assert get_skill_memory(svc, GetSkillMemoryRequest(format="data")).rules == []  # scope unknown: not trusted
    paper = make_services(Path(svc.settings.home), preset="paper")
    assert len(get_skill_memory(paper, GetSkillMemoryRequest(format="data")).rules) == 2  # counts 12 and 4
    assert import_memory(svc, text) == (0, 3)  # importing again adds nothing


async def test_a_malformed_import_names_the_line_and_imports_nothing(svc: Services) -> None:
    text = "You cannot do a.||3\nYou cannot do b.||3\nthis line has no count\nYou cannot do c.||1\n"
    with pytest.raises(RequestError, match="line 3 is not 'rule text"):
        import_memory(svc, text)
    with pytest.raises(RequestError, match="not a valid adaexplore memory export"):
        import_memory(svc, '{"format": "adaexplore-memory", "rules": [{"text": "You cannot x."}]}')
    assert rows(svc, "rules") == 0


async def test_our_export_round_trips_with_counts_tasks_and_signatures(svc: Services, tmp_path: Path) -> None:
    a, b = tasks(svc)
    await record_failure(svc, failure("mistake/break/scale_relu", a, BREAK_RULE))
    await record_failure(svc, failure("mistake/break/elementwise_chain", b))
    exported = export_memory(svc)
    other = make_services(tmp_path / "other")
    assert import_memory(other, exported) == (1, 0)
    (original,), (copy,) = svc.store.rules(), other.store.rules()
    assert (copy.text, copy.occurrences, copy.tasks, copy.signatures, copy.triton_min) == (
        original.text,
        original.occurrences,
        original.tasks,
        original.signatures,
        original.triton_min,
    )
    assert export_memory(svc, "paper") == f"{BREAK_RULE}||2\n"


async def test_the_skill_memory_answer_follows_every_rule_change_from_any_connection(svc: Services) -> None:
    a, b = tasks(svc)
    for _ in range(3):
        await record_failure(svc, failure("mistake/break/scale_relu", a, BREAK_RULE))
    ask = GetSkillMemoryRequest()
    before = get_skill_memory(svc, ask)
    assert before.rules == [] and get_skill_memory(svc, ask) is before  # unchanged rules: the same answer
    # A count alone (no new rule, no new text) moves the rule over the threshold.
    await record_failure(svc, failure("mistake/break/elementwise_chain", b))
    after = get_skill_memory(svc, ask)
    assert [r.text for r in after.rules] == [BREAK_RULE]
    # Another connection to the same file retires it; this one sees that at once.
    other = open_store(svc.settings.database_url)
    try:
        other.set_rule_status(after.rules[0].rule_id, "retired")
    finally:
        other.close()
    assert get_skill_memory(svc, ask).rules == []
