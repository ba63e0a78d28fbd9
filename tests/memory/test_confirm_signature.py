"""`memory confirm` backs a rule only with a reproducer that fails by the rule's own signature."""

from __future__ import annotations

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
    Services,
    confirm_rule,
    create_task,
    seed_starter_memory,
)

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "tests/executor/data/scale_relu_task.py"
# fails, with a mistake of its own, in its constructor: a mistake no rule is about (as a reproducer meets it
# when --task names a task whose inputs it was not written for)
UNRELATED = """
import torch


class ModelNew(torch.nn.Module):
    def __init__(self, *args):
        super().__init__()
        raise ValueError("this constructor wants the inputs of another task: 3 sizes, got " + str(len(args)))

    def forward(self, x):
        return x
"""

pytestmark = pytest.mark.anyio


def _starter_rule() -> tuple[str, Path, Path]:
    starter = next(r for r in load_starter() if r.backend == "compile")
    return starter.text, starter.reproducer, starter.task


async def test_a_reproducer_on_the_wrong_task_backs_nothing_and_says_what_it_failed_with(
    tmp_path: Path, evaluator: Evaluator
) -> None:
    settings = Settings(home=tmp_path)
    svc = Services(settings=settings, store=open_store(settings.database_url), evaluator=evaluator)
    seed_starter_memory(svc)
    text, reproducer, own_task = _starter_rule()
    rule = next(r for r in svc.store.rules() if r.text == text)
    assert rule.signatures  # a starter rule has its own signatures
    before = (rule.occurrences, rule.source, list(rule.signatures))

    wrong = create_task(svc, CreateTaskRequest(path=str(TASK)))
    with pytest.raises(
        RequestError, match=rf"does not fail by rule {rule.id}'s own signature.*failed with \w+ \("
    ) as e:
        await confirm_rule(
            svc, ConfirmRuleRequest(rule_id=rule.id, task_id=wrong.task_id, code=UNRELATED, backend="compile")
        )
    assert "inputs of another task" in str(e.value) and "--task" in str(e.value)
    after = svc.store.rule(rule.id)
    assert (after.occurrences, after.source, list(after.signatures)) == before

    right = create_task(svc, CreateTaskRequest(path=str(own_task)))
    result = await confirm_rule(
        svc, ConfirmRuleRequest(rule_id=rule.id, task_id=right.task_id, code=reproducer.read_text(), backend="compile")
    )
    assert result.signature in rule.signatures and f"rule {rule.id} is backed" in result.message


def test_memory_confirm_with_an_unrelated_failure_exits_nonzero(tmp_path: Path) -> None:
    text, _, _ = _starter_rule()
    reproducer = tmp_path / "unrelated.py"
    reproducer.write_text(UNRELATED)
    env = {**os.environ, "ADAEXPLORE_HOME": str(tmp_path)}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "adaexplore", *args], capture_output=True, text=True, env=env, timeout=300
        )

    listed = cli("memory", "list", "--all").stdout
    rule_id = next(line.split()[0] for line in listed.splitlines() if text[:60] in line)
    done = cli("memory", "confirm", rule_id, str(reproducer), "--task", str(TASK), "--backend", "compile")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "backs nothing" in done.stderr and "inputs of another task" in done.stderr and not done.stdout
