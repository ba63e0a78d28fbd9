"""Backing a rule with a reproducer (`confirm_rule`, `adaexplore memory confirm`): real evaluations of
real kernels, a real SQLite file, and the CLI as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adaexplore.config import Settings
from adaexplore.errors import RequestError
from adaexplore.executor import Evaluator
from adaexplore.memory import load_starter
from adaexplore.store import open_store
from adaexplore.tools import (
    ConfirmRuleRequest,
    CreateTaskRequest,
    GetSkillMemoryRequest,
    Services,
    confirm_rule,
    create_task,
    get_skill_memory,
    import_memory,
    running_triton,
    seed_starter_memory,
)

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "tests/executor/data/scale_relu_task.py"
CORRECT = (ROOT / "tests/executor/data/scale_relu_kernel.py").read_text()
REPRODUCER = Path(__file__).parent / "data" / "eviction_policy_reproducer.py"
IMPORTED = "You cannot pass tl.load an eviction_policy other than evict_first or evict_last.||7\n"

pytestmark = pytest.mark.anyio


def services(home: Path, evaluator: Evaluator) -> Services:
    settings = Settings(home=home)
    svc = Services(settings=settings, store=open_store(settings.database_url), evaluator=evaluator)
    seed_starter_memory(svc)
    return svc


def injected_ids(svc: Services) -> set[int]:
    return {r.rule_id for r in get_skill_memory(svc, GetSkillMemoryRequest(format="data")).rules}


def _our_format(text: str) -> str:
    """The IMPORTED rule in our JSON format, claiming all the trust a file can claim: curated, pinned, and
    scoped to the running Triton. An import takes none of it on trust."""
    rule, _, count = text.strip().rpartition("||")
    triton = running_triton()
    claimed = {"status": "pinned", "source": "curated", "triton_min": triton, "triton_max": triton}
    return json.dumps({"format": "adaexplore-memory", "rules": [{"text": rule, "occurrences": int(count), **claimed}]})


@pytest.mark.parametrize("fmt", ["paper", "adaexplore"])
async def test_a_reproducer_gives_an_imported_rule_its_scope_and_gets_it_injected(
    tmp_path: Path, evaluator: Evaluator, fmt: str
) -> None:
    svc = services(tmp_path, evaluator)
    assert import_memory(svc, IMPORTED if fmt == "paper" else _our_format(IMPORTED)).imported == 1
    (rule,) = [r for r in svc.store.rules() if r.source == "imported"]
    assert not rule.scope_known and rule.status == "active" and rule.id not in injected_ids(svc)
    task = create_task(svc, CreateTaskRequest(path=str(TASK)))

    result = await confirm_rule(
        svc, ConfirmRuleRequest(rule_id=rule.id, task_id=task.task_id, code=REPRODUCER.read_text())
    )

    assert result.status == "compile_error" and result.injected, result.message
    confirmed = svc.store.rule(rule.id)
    assert confirmed.source == "curated" and confirmed.holds_for(running_triton())
    assert result.signature in confirmed.signatures
    assert (confirmed.occurrences, confirmed.tasks) == (8, 1)  # the file's 7, and the reproducer's failure
    assert rule.id in injected_ids(svc)
    assert [f.code for f in svc.store.failures(rule.id)] == [REPRODUCER.read_text()]
    # The same reproducer again confirms the rule again, but is not a second occurrence.
    again = await confirm_rule(
        svc, ConfirmRuleRequest(rule_id=rule.id, task_id=task.task_id, code=REPRODUCER.read_text())
    )
    assert "counted before" in again.message and again.rule.occurrences == 8
    assert len(svc.store.failures(rule.id)) == 1


async def test_a_reproducer_that_passes_or_shows_another_rules_mistake_confirms_nothing(
    tmp_path: Path, evaluator: Evaluator
) -> None:
    svc = services(tmp_path, evaluator)
    import_memory(svc, IMPORTED)
    (rule,) = [r for r in svc.store.rules() if r.source == "imported"]
    task = create_task(svc, CreateTaskRequest(path=str(TASK)))
    with pytest.raises(RequestError, match="the reproducer passed"):
        await confirm_rule(svc, ConfirmRuleRequest(rule_id=rule.id, task_id=task.task_id, code=CORRECT))

    starter = next(r for r in load_starter() if r.backend == "compile")
    owner = next(r for r in svc.store.rules() if r.text == starter.text)
    starter_task = create_task(svc, CreateTaskRequest(path=str(starter.task)))
    with pytest.raises(RequestError, match=f"the mistake of rule {owner.id}"):
        await confirm_rule(
            svc,
            ConfirmRuleRequest(
                rule_id=rule.id, task_id=starter_task.task_id, code=starter.reproducer.read_text(), backend="compile"
            ),
        )
    with pytest.raises(RequestError, match="no rule has id 99999"):
        await confirm_rule(svc, ConfirmRuleRequest(rule_id=99999, task_id=task.task_id, code=CORRECT))

    after = svc.store.rule(rule.id)
    assert (after.source, after.scope_known, after.occurrences, after.signatures) == ("imported", False, 7, [])
    assert svc.store.failures(rule.id) == []


def test_memory_confirm_on_the_command_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    rules = tmp_path / "rules.txt"
    rules.write_text(IMPORTED)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "ADAEXPLORE_HOME": str(home)}
        return subprocess.run(
            [sys.executable, "-m", "adaexplore", *args], capture_output=True, text=True, env=env, timeout=300
        )

    assert cli("memory", "import", str(rules)).returncode == 0
    listed = cli("memory", "list").stdout
    line = next(x for x in listed.splitlines() if "eviction_policy" in x)
    rule_id = line.split()[0]
    assert "imported" in line and "unknown" in line

    done = cli("memory", "confirm", rule_id, str(REPRODUCER), "--task", str(TASK))
    assert done.returncode == 0, done.stderr
    assert f"rule {rule_id} is backed by a reproducer that fails with compile_error" in done.stdout
    assert "injected into prompts" in done.stdout
    line = next(x for x in cli("memory", "list").stdout.splitlines() if "eviction_policy" in x)
    assert "curated" in line and "yes" in line and f"triton {running_triton()}" in line

    missing = cli("memory", "confirm", rule_id, str(tmp_path / "nope.py"), "--task", str(TASK))
    assert missing.returncode != 0 and "does not exist" in missing.stderr
