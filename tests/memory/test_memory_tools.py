"""record_failure, get_skill_memory, export and import, on a real SQLite file with real failure texts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adaexplore.config import MemoryConfig
from adaexplore.errors import RequestError
from adaexplore.executor import Evaluation
from adaexplore.memory import RuleCandidate, tokens
from adaexplore.store import NewRule, open_store
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
from tests.conftest import Databases
from tests.fakes import FakeEvaluator, by_hash

ROOT = Path(__file__).resolve().parents[2]
CORPUS = {c["case"]: c for c in json.loads((Path(__file__).parent / "data" / "failure_corpus.json").read_text())}

pytestmark = pytest.mark.anyio


def make_services(databases: Databases, home: Path, **memory: object) -> Services:
    settings = databases.settings(home, memory=MemoryConfig(**memory))
    svc = Services(settings=settings, store=open_store(settings.database_url), evaluator=FakeEvaluator(by_hash))
    svc.store.meta_set("starter_memory", "0")  # these tests start from an empty memory
    return svc


@pytest.fixture
def svc(databases: Databases, tmp_path: Path) -> Services:
    return make_services(databases, tmp_path)


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


async def test_the_same_sentence_is_one_rule_even_with_no_words_to_compare(svc: Services) -> None:
    a, _ = tasks(svc)
    vague = "You cannot do it."  # stop words alone: no tokens for the similarity to work with
    first = await record_failure(svc, failure("mistake/break/scale_relu", a, vague))
    second = await record_failure(svc, failure("mistake/lambda/scale_relu", a, vague))
    assert first.merged_by == "new" and second.merged_by == "similarity"
    assert first.rule is not None and second.rule is not None and second.rule.rule_id == first.rule.rule_id
    assert [r.text for r in svc.store.rules()].count(vague) == 1


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


async def test_the_paper_preset_counts_occurrences_only(databases: Databases, tmp_path: Path) -> None:
    svc = make_services(databases, tmp_path, preset="paper")
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


async def test_the_authors_rule_count_format_imports_as_is(svc: Services, databases: Databases) -> None:
    text = (
        "You cannot use tl.tanh; write it with tl.exp.||12\n"
        "You cannot index a tensor with a Python list inside a kernel.||4\n"
        "You cannot rely on float16 accumulators.||1\n"
    )
    assert import_memory(svc, text) == (3, 0, 0, 0, 0)
    rules = svc.store.rules()
    assert {r.source for r in rules} == {"imported"} and not any(r.scope_known for r in rules)
    assert get_skill_memory(svc, GetSkillMemoryRequest(format="data")).rules == []  # scope unknown: not trusted
    paper = make_services(databases, Path(svc.settings.home), preset="paper")
    assert len(get_skill_memory(paper, GetSkillMemoryRequest(format="data")).rules) == 2  # counts 12 and 4
    assert import_memory(svc, text) == (0, 3, 0, 0, 0)  # importing again adds nothing


async def test_the_paper_preset_injects_every_rule_over_its_count_in_file_order(
    databases: Databases, tmp_path: Path
) -> None:
    # the authors' released file injects 78 rules; a cap of ours must not cut that, nor reorder it
    counts = [3 + (i * 37) % 50 for i in range(80)]
    text = "".join(f"You cannot use construct number {i} of the language here.||{c}\n" for i, c in enumerate(counts))
    paper = make_services(databases, tmp_path, preset="paper")
    assert import_memory(paper, text + "You cannot do a thing once.||1\n").imported == 81
    injected = get_skill_memory(paper, GetSkillMemoryRequest(format="data")).rules
    assert [r.text for r in injected] == [
        f"You cannot use construct number {i} of the language here." for i in range(80)
    ]
    assert MemoryConfig(preset="paper", max_rules=10).max_rules == 10  # a limit given is kept


async def test_a_malformed_import_names_the_line_and_imports_nothing(svc: Services) -> None:
    text = "You cannot do a.||3\nYou cannot do b.||3\nthis line has no count\nYou cannot do c.||1\n"
    with pytest.raises(RequestError, match="line 3 is not 'rule text"):
        import_memory(svc, text)
    # a rule is a "You cannot …" sentence, as `memory edit` and record_failure require
    with pytest.raises(RequestError, match="line 2: a rule is a sentence that starts with 'You cannot"):
        import_memory(svc, "You cannot do a.||3\nPrefer float32 accumulators.||1\n")
    with pytest.raises(RequestError, match=r"rule 1: text 'Prefer float32\.' does not start with 'You cannot"):
        import_memory(svc, json.dumps({"format": "adaexplore-memory", "rules": [_json_rule("Prefer float32.")]}))
    with pytest.raises(RequestError, match="not a valid adaexplore memory export"):
        import_memory(svc, '{"format": "adaexplore-memory", "rules": [{"text": "You cannot x."}]}')
    assert rows(svc, "rules") == 0


async def test_our_export_round_trips_with_counts_tasks_and_signatures(
    svc: Services, databases: Databases, tmp_path: Path
) -> None:
    a, b = tasks(svc)
    await record_failure(svc, failure("mistake/break/scale_relu", a, BREAK_RULE))
    await record_failure(svc, failure("mistake/break/elementwise_chain", b))
    exported = export_memory(svc)
    other = make_services(databases, tmp_path / "other")
    assert import_memory(other, exported) == (1, 0, 0, 0, 0)
    (original,), (copy,) = svc.store.rules(), other.store.rules()
    assert (copy.text, copy.occurrences, copy.tasks, copy.signatures) == (
        original.text,
        original.occurrences,
        original.tasks,
        original.signatures,
    )
    # Imported, the rule waits for a reproducer on this Triton: its scope is not taken on trust.
    assert (original.source, original.scope_known) == ("distilled", True)
    assert (copy.source, copy.scope_known, copy.backends) == ("imported", False, [])
    assert get_skill_memory(other, GetSkillMemoryRequest(format="data", min_occurrences=1, min_tasks=1)).rules == []
    # Its signatures came along: the same mistake in the other memory lands on it.
    again = await record_failure(other, failure("mistake/break/scale_relu", tasks(other)[0]))
    assert again.merged_by == "signature" and again.rule is not None and again.rule.rule_id == copy.id
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


# ---- retired rules -----------------------------------------------------------------------------------
async def test_a_retired_rule_keeps_counting_its_mistake_and_is_never_injected_or_made_again(
    svc: Services, databases: Databases
) -> None:
    a, b = tasks(svc)
    first = await record_failure(svc, failure("mistake/break/scale_relu", a, BREAK_RULE))
    assert first.rule is not None
    rule_id = first.rule.rule_id
    svc.store.set_rule_status(rule_id, "retired")

    # The same mistake, with no sentence, with the same sentence, and in another task: all land on it.
    by_signature = await record_failure(svc, failure("mistake/break/scale_relu", a))
    same_text = await record_failure(svc, failure("mistake/break/elementwise_chain", b, BREAK_RULE))
    for result in (by_signature, same_text):
        assert result.merged_by == "signature" and result.rule is not None and result.rule.rule_id == rule_id
        assert result.rule.status == "retired" and not result.injected
        assert f"rule {rule_id} (signature), which is retired" in result.message
        assert "never injected" in result.message
    # A new mistake whose sentence reads like the retired rule's joins it by similarity.
    similar = "You cannot use continue inside a @triton.jit kernel loop; bound the loop and mask the body instead."
    by_text = await record_failure(svc, failure("mistake/continue/scale_relu", a, similar))
    assert by_text.merged_by == "similarity" and by_text.rule is not None and by_text.rule.rule_id == rule_id

    (rule,) = svc.store.rules()
    assert (rule.status, rule.occurrences, rule.tasks) == ("retired", 4, 2)
    assert rows(svc, "rules") == 1
    assert get_skill_memory(svc, GetSkillMemoryRequest(format="data", min_occurrences=1, min_tasks=1)).rules == []
    paper = make_services(databases, Path(svc.settings.home), preset="paper")
    assert get_skill_memory(paper, GetSkillMemoryRequest(format="data", min_occurrences=1)).rules == []


# ---- generic and empty failures ----------------------------------------------------------------------
async def test_timeouts_given_as_text_never_merge_rules_by_signature(svc: Services) -> None:
    a, b = tasks(svc)
    hang = CORPUS["example/layernorm/hang"]["evaluation"]["message"]
    first = await record_failure(
        svc,
        RecordFailureRequest(
            task_id=a, status="timeout", error_text=hang, code="x", rule="You cannot loop on a value never updated."
        ),
    )
    second = await record_failure(
        svc,
        RecordFailureRequest(
            task_id=b,
            status="timeout",
            error_text=hang.replace("trial 1", "trial 3"),
            code="y",
            rule="You cannot spin on a global counter waiting for other programs.",
        ),
    )
    assert first.signature_key == second.signature_key == "timeout"
    assert (first.merged_by, second.merged_by) == ("new", "new")
    assert first.rule and second.rule and first.rule.rule_id != second.rule.rule_id
    assert rows(svc, "rule_signatures") == 0  # a timeout is never a rule's signature
    bare = await record_failure(svc, RecordFailureRequest(task_id=a, status="timeout", error_text=hang, code="x"))
    assert bare.merged_by == "none" and bare.rule is None


async def test_an_evaluation_with_no_error_text_is_refused_like_an_empty_error_text(svc: Services) -> None:
    a, _ = tasks(svc)
    await record_failure(svc, failure("mistake/break/scale_relu", a, BREAK_RULE))
    before = {t: rows(svc, t) for t in ("rules", "failures", "rule_signatures", "rule_tasks")}
    template = CORPUS["example/elementwise_chain/out_of_bounds"]["evaluation"]
    for status in ("runtime_error", "compile_error", "syntax_error"):
        empty = Evaluation.model_validate({**template, "status": status, "message": "", "error": None})
        for rule in (None, "You cannot do whatever this was."):
            with pytest.raises(RequestError, match="the failure has no error text: the evaluation has an empty"):
                await record_failure(svc, RecordFailureRequest(task_id=a, evaluation=empty, code="x", rule=rule))
    with pytest.raises(RequestError, match="the failure has no error text"):
        await record_failure(svc, RecordFailureRequest(task_id=a, status="runtime_error", error_text="", code="x"))
    assert {t: rows(svc, t) for t in before} == before


# ---- importing ---------------------------------------------------------------------------------------
async def test_the_authors_float_counts_import_and_bad_counts_name_their_line(
    svc: Services, databases: Databases
) -> None:
    text = (
        "You cannot call tl.float32 as a function||138.0\n"
        "You cannot use tl.tanh; write it with tl.exp.||34\n"
        "You cannot index a tensor with a Python list.||0.0\n"
    )
    assert import_memory(svc, text) == (3, 0, 0, 0, 0)
    counts = {r.text: r.occurrences for r in svc.store.rules()}
    assert counts == {
        "You cannot call tl.float32 as a function": 138,
        "You cannot use tl.tanh; write it with tl.exp.": 34,
        "You cannot index a tensor with a Python list.": 0,
    }
    for bad in ("34.5", "-1", "-1.0", "nan", "inf", "1e400", "1e13", "", "many", "0x10"):
        other = make_services(databases, Path(svc.settings.home) / f"bad{abs(hash(bad))}")
        with pytest.raises(RequestError, match=r"line 2: the count .* is not a whole number from 0") as refused:
            import_memory(other, f"You cannot a.||3\nYou cannot b.||{bad}\nYou cannot c.||1\n")
        assert repr(bad) in str(refused.value) and "nothing was imported" in str(refused.value)
        assert rows(other, "rules") == 0


async def test_repeated_rules_in_one_file_are_merged_with_their_counts_added(
    svc: Services, databases: Databases
) -> None:
    text = "You cannot a.||2\nYou cannot b.||1\nYou cannot  a.||3.0\nYou cannot a.||4\n"
    assert import_memory(svc, text) == (2, 0, 2, 0, 0)
    assert {r.text: r.occurrences for r in svc.store.rules()} == {"You cannot a.": 9, "You cannot b.": 1}

    a, b = tasks(svc)
    ours = {
        "format": "adaexplore-memory",
        "version": 1,
        "rules": [
            {**_json_rule("You cannot c."), "occurrences": 2, "tasks": [a], "signatures": [_sig("k1")]},
            {**_json_rule("You cannot c."), "occurrences": 5, "tasks": [a, b], "signatures": [_sig("k2")]},
        ],
    }
    other = make_services(databases, Path(svc.settings.home) / "other")
    assert import_memory(other, json.dumps(ours)) == (1, 0, 1, 0, 0)
    (rule,) = other.store.rules()
    assert (rule.occurrences, rule.tasks, sorted(rule.signatures)) == (7, 2, sorted([_sig("k1")[0], _sig("k2")[0]]))


def _sig(key: str) -> list[str]:
    from adaexplore.memory import Signature

    return [Signature(key).id, key]


def _json_rule(text: str, **fields: object) -> dict[str, object]:
    return {"text": text, "status": "active", "source": "distilled", "occurrences": 1, **fields}


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ({"signatures": [["abc"]]}, "signatures [['abc']] is not a list of [id, key] pairs of strings"),
        ({"signatures": [["abc", "a key"]]}, "signature 'abc' is not the id of its key 'a key'"),
        ({"signatures": "abc"}, "is not a list of [id, key] pairs"),
        ({"occurrences": float("inf")}, "occurrences inf is not a whole number"),  # what 1e400 reads as
        ({"occurrences": 2.5}, "occurrences 2.5 is not a whole number"),
        ({"occurrences": -3}, "occurrences -3 is not a whole number"),
        ({"occurrences": "7"}, None),  # a string of digits is a count, as in the authors' file
        ({"occurrences": True}, "occurrences True is not a whole number"),
        ({"text": 5}, "text 5 is not a sentence"),
        ({"text": "   "}, "text '   ' is not a sentence"),
        ({"status": "archived"}, "status 'archived' is not one of active, retired, pinned"),
        ({"source": "model"}, "source 'model' is not one of distilled, imported, curated"),
        ({"tasks": "task-a"}, "tasks 'task-a' is not a list of task ids"),
        ({"tasks": [3]}, "tasks [3] is not a list of task ids"),
        ({"backends": ["gpu"]}, "backends ['gpu'] is not a list of cuda, compile, interpret"),
        ({"triton_min": 3.6}, "triton_min 3.6 is not a Triton version"),
        ({"triton_max": "latest"}, "triton_max 'latest' is not a Triton version"),
        ({"occurence": 3}, "unknown field(s) occurence"),
    ],
)
async def test_every_field_of_our_format_is_checked_and_the_rule_named(
    svc: Services, bad: dict[str, object], fragment: str | None
) -> None:
    data = {
        "format": "adaexplore-memory",
        "version": 1,
        "rules": [_json_rule("You cannot a.", signatures=[_sig("key a")]), {**_json_rule("You cannot b."), **bad}],
    }
    if fragment is None:
        assert import_memory(svc, json.dumps(data)).imported == 2
        return
    with pytest.raises(RequestError) as refused:
        import_memory(svc, json.dumps(data))
    message = str(refused.value)
    assert message.startswith("the file is not a valid adaexplore memory export: rule 2: "), message
    assert fragment in message and message.endswith("nothing was imported")
    assert rows(svc, "rules") == 0 and rows(svc, "rule_signatures") == 0


_VERSIONED = (
    '{"format": "adaexplore-memory", "version": %s, '
    '"rules": [{"text": "You cannot a.", "status": "active", "source": "distilled", "occurrences": 1}]}'
)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('{"format": "adaexplore-memory", "rules": [1e400', "it is not JSON"),
        ('{"format": "something else", "rules": []}', 'it has no "format": "adaexplore-memory"'),
        ('{"format": "adaexplore-memory", "version": 2, "rules": []}', "version 2 is not one this adaexplore reads"),
        # a version we never wrote, though Python finds it equal to 1; with a rule in it, so nothing is imported
        (_VERSIONED % "true", "version true is not one this adaexplore reads (it reads version 1"),
        (_VERSIONED % "1.0", "version 1.0 is not one this adaexplore reads"),
        (_VERSIONED % '"1"', 'version "1" is not one this adaexplore reads'),
        (_VERSIONED % "null", "version null is not one this adaexplore reads"),
        ('{"format": "adaexplore-memory", "rules": {}}', '"rules" is not a list'),
        ('{"format": "adaexplore-memory", "rules": ["You cannot a."]}', "rule 1: it is str, not an object"),
        ('{"format": "adaexplore-memory", "rules": [{"text": "You cannot x."}]}', "rule 1: it lacks status"),
    ],
)
async def test_a_file_that_is_not_our_format_says_what_is_wrong(svc: Services, text: str, fragment: str) -> None:
    with pytest.raises(RequestError, match="not a valid adaexplore memory export") as refused:
        import_memory(svc, text)
    assert fragment in str(refused.value)
    assert rows(svc, "rules") == 0


async def test_two_rules_of_a_file_cannot_share_a_signature(svc: Services) -> None:
    data = {
        "format": "adaexplore-memory",
        "rules": [
            _json_rule("You cannot a.", signatures=[_sig("k")]),
            _json_rule("You cannot b.", signatures=[_sig("k")]),
        ],
    }
    with pytest.raises(RequestError, match=f"rule 2: its signature {_sig('k')[0]} is listed by rule 1 too"):
        import_memory(svc, json.dumps(data))
    assert rows(svc, "rules") == 0


async def test_imported_rules_wait_for_a_reproducer_whatever_the_file_claims(svc: Services) -> None:
    from adaexplore.tools import running_triton

    triton = running_triton()
    claimed = {"source": "curated", "triton_min": triton, "triton_max": triton, "backends": ["compile"]}
    data = {
        "format": "adaexplore-memory",
        "version": 1,
        "rules": [
            _json_rule("You cannot trust a curated claim.", **claimed, occurrences=50, tasks=["t1", "t2"]),
            _json_rule("You cannot trust a pin.", **claimed, status="pinned"),
            _json_rule("You cannot undo a retirement.", **claimed, status="retired"),
        ],
    }
    assert import_memory(svc, json.dumps(data)) == (3, 0, 0, 1, 0)
    rules = {r.text: r for r in svc.store.rules()}
    assert {r.source for r in rules.values()} == {"imported"}
    assert not any(r.scope_known or r.backends for r in rules.values())
    assert {t: r.status for t, r in rules.items()} == {
        "You cannot trust a curated claim.": "active",
        "You cannot trust a pin.": "active",
        "You cannot undo a retirement.": "retired",
    }
    assert rules["You cannot trust a curated claim."].occurrences == 50
    data = get_skill_memory(svc, GetSkillMemoryRequest(format="data"))
    assert data.rules == []
    # they are listed apart, with the ids confirm_rule takes (the retired one is not waiting for anything)
    assert {r.text for r in data.unconfirmed} == {"You cannot trust a curated claim.", "You cannot trust a pin."}
    assert get_skill_memory(svc, GetSkillMemoryRequest(format="prompt")).unconfirmed == []
    # a version written short is the same version
    assert get_skill_memory(svc, GetSkillMemoryRequest(triton="3.6", format="data")).triton == "3.6.0"


async def test_a_nodes_failure_counts_once_however_often_it_is_sent(svc: Services) -> None:
    from adaexplore.executor import Status
    from adaexplore.tools import CompileAndProfileRequest, StartRunRequest, compile_and_profile, start_run

    svc.evaluator = FakeEvaluator(lambda code, _: (Status.compile_error, None))
    task_id, _ = tasks(svc)
    run = start_run(svc, StartRunRequest(task_id=task_id, seed=1))
    made = await compile_and_profile(
        svc, CompileAndProfileRequest(code="k", run_id=run.run_id, parent_id=run.root_node_id, action="large")
    )
    assert made.node_id is not None
    bare = await record_failure(svc, RecordFailureRequest(task_id=task_id, node_id=made.node_id))
    assert bare.rule is None
    # the rule given later is the failure's rule, counted once
    ruled = await record_failure(svc, RecordFailureRequest(task_id=task_id, node_id=made.node_id, rule=BREAK_RULE))
    assert ruled.failure_id == bare.failure_id and ruled.rule is not None and ruled.rule.occurrences == 1
    for rule in (BREAK_RULE, None):  # a retry, with or without the rule
        again = await record_failure(svc, RecordFailureRequest(task_id=task_id, node_id=made.node_id, rule=rule))
        assert again.failure_id == bare.failure_id and "recorded already" in again.message
        assert again.rule is not None and again.rule.occurrences == 1
    assert rows(svc, "failures") == 1
    assert svc.store.rule(ruled.rule.rule_id).occurrences == 1


async def test_an_export_brings_its_evidence_to_the_rules_already_present(
    svc: Services, databases: Databases, tmp_path: Path
) -> None:
    # The same rule on two machines (the starter memory is in every home): its counts, tasks and signatures
    # and its retirement come across, and importing the file twice counts it once.
    a, b = tasks(svc)
    await record_failure(svc, failure("mistake/break/scale_relu", a, BREAK_RULE))
    await record_failure(svc, failure("mistake/break/elementwise_chain", b))
    svc.store.add_rules([NewRule(text="You cannot retire me twice.", tokens={"retire"})])
    retired = svc.store.rule_with_text("You cannot retire me twice.")
    assert retired is not None
    svc.store.set_rule_status(retired.id, "retired")
    exported = export_memory(svc)
    other = make_services(databases, tmp_path / "other")
    other.store.add_rules(
        [NewRule(text=BREAK_RULE, tokens=tokens(BREAK_RULE)), NewRule(text="You cannot retire me twice.", tokens=set())]
    )
    assert import_memory(other, exported) == (0, 2, 0, 0, 2)
    original, copy = svc.store.rule_with_text(BREAK_RULE), other.store.rule_with_text(BREAK_RULE)
    assert original is not None and copy is not None
    assert (copy.occurrences, copy.tasks, copy.signatures, copy.status) == (2, 2, original.signatures, "active")
    assert copy.source == "distilled"  # its own source and scope stay
    assert other.store.rule_task_ids(copy.id) == svc.store.rule_task_ids(original.id)
    assert other.store.rule_signature_keys(copy.id) == svc.store.rule_signature_keys(original.id)
    moved = other.store.rule_with_text("You cannot retire me twice.")
    assert moved is not None and moved.status == "retired"
    assert import_memory(other, exported) == (0, 2, 0, 0, 0)  # the same file again changes nothing
    again = other.store.rule_with_text(BREAK_RULE)
    assert again is not None and again.occurrences == 2
