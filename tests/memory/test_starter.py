"""The starter memory: at least 25 rules, each backed by a reproducer that still fails with exactly the
rule's signature. When Triton changes, the failing cases name the rules that went stale."""

from __future__ import annotations

from pathlib import Path

import pytest

from adaexplore.config import Settings
from adaexplore.executor import EvaluationOptions, Evaluator, load_task
from adaexplore.memory import StarterRule, load_starter, signature
from adaexplore.store import open_store
from adaexplore.tools import GetSkillMemoryRequest, Services, get_skill_memory, seed_starter_memory
from tests.fakes import FakeEvaluator, by_hash

STARTER = load_starter()

pytestmark = pytest.mark.anyio


def test_the_starter_memory_has_at_least_25_distinct_rules_in_rule_form() -> None:
    assert len(STARTER) >= 25
    assert all(rule.text.startswith("You cannot ") for rule in STARTER)
    assert len({rule.text for rule in STARTER}) == len(STARTER)
    assert len({rule.signature_id for rule in STARTER}) == len(STARTER)
    assert {rule.backend for rule in STARTER} <= {"compile", "interpret"}


@pytest.mark.parametrize("rule", STARTER, ids=[rule.reproducer.stem for rule in STARTER])
async def test_every_reproducer_still_fails_with_its_rules_signature(evaluator: Evaluator, rule: StarterRule) -> None:
    code = rule.reproducer.read_text()
    result = await evaluator.evaluate(load_task(rule.task), code, EvaluationOptions(backend=rule.backend))
    found = signature(result, code)
    assert (result.status.value, found.id) == (rule.status, rule.signature_id), (
        f"stale rule {rule.reproducer.name!r} ({rule.text}): recorded {rule.status} {rule.signature_key!r} on "
        f"triton {rule.triton}, now {result.status.value} {found.key!r}: {result.message[:300]}"
    )


def test_the_starter_rules_are_seeded_once_and_injected_for_their_triton(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    svc = Services(settings=settings, store=open_store(settings.database_url), evaluator=FakeEvaluator(by_hash))
    assert seed_starter_memory(svc) == len(STARTER)
    assert seed_starter_memory(svc) == 0
    memory = get_skill_memory(svc, GetSkillMemoryRequest(triton=STARTER[0].triton, format="data"))
    assert len(memory.rules) == min(len(STARTER), settings.memory.max_rules)
    assert {r.source for r in memory.rules} == {"curated"}
    assert get_skill_memory(svc, GetSkillMemoryRequest(triton="99.0.0", format="data")).rules == []
    first = svc.store.rules()[0]
    svc.store.set_rule_status(first.id, "retired")
    assert seed_starter_memory(svc) == 0
    assert svc.store.rule(first.id).status == "retired"
