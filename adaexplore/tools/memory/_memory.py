"""The skill memory's tools: read the rules to inject, and back a rule with a reproducer; and what the other
memory tools share (a rule as answers show it, whether it is injected, the starter memory, a failure's
signature). Recording a failure is in _record, managing the rules in _rules and _memory_files."""

from __future__ import annotations

import functools
import importlib.metadata
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from adaexplore.config import MemoryConfig
from adaexplore.errors import RequestError
from adaexplore.executor import Evaluation, EvaluationOptions, Progress, Status
from adaexplore.memory import (
    Signature,
    load_starter,
    signature,
    tokens,
)
from adaexplore.prompts import render_skill_memory
from adaexplore.store import NewRule, RuleRecord
from adaexplore.tools._service import Services, parsed_task

__all__ = [
    "KEY_DISPLAY",
    "ConfirmRuleRequest",
    "ConfirmRuleResult",
    "GetSkillMemoryRequest",
    "GetSkillMemoryResult",
    "SkillRule",
    "confirm_rule",
    "describe_scope",
    "described_failure",
    "get_skill_memory",
    "injected",
    "running_triton",
    "seed_starter_memory",
    "skill_rule",
]

KEY_DISPLAY = 4000  # the most of a signature's key an answer shows


class SkillRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rule_id: int
    text: str
    occurrences: int
    tasks: int
    status: str
    source: str
    scope: str


class ConfirmRuleRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rule_id: int = Field(description="the rule to back with evidence (see `adaexplore memory list`)")
    task_id: str = Field(description="the task the reproducer is a candidate for (from create_task)")
    code: str = Field(description="the reproducer: a module defining ModelNew that fails with the rule's mistake")
    backend: str | None = Field(default=None, description="the evaluator backend (default: this machine's)")


class ConfirmRuleResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rule: SkillRule
    status: str
    signature: str
    signature_key: str
    injected: bool
    message: str


class GetSkillMemoryRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    triton: str | None = Field(default=None, description="the Triton version to scope to (default: the running one)")
    backend: Literal["cuda", "compile", "interpret"] | None = None
    format: Literal["prompt", "data"] = "prompt"
    min_occurrences: int | None = Field(default=None, ge=1)
    min_tasks: int | None = Field(default=None, ge=1)


class GetSkillMemoryResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)  # served from a cache: callers must not change it

    triton: str
    min_occurrences: int
    min_tasks: int
    rules: list[SkillRule] = Field(description="the rules with their counts (over MCP: format data only)")
    prompt: str | None
    unconfirmed: list[SkillRule] = Field(
        default=[],
        description="(format data) imported rules of unknown scope, not injected until confirm_rule backs one",
    )


@functools.cache
def running_triton() -> str:
    """The installed Triton's version, read from its metadata once (nothing is imported)."""
    return importlib.metadata.version("triton")


def describe_scope(rule: RuleRecord) -> str:
    if not rule.scope_known:
        return "unknown"
    span = rule.triton_min if rule.triton_min == rule.triton_max else f"{rule.triton_min}–{rule.triton_max}"
    return f"triton {span}" + (f" ({', '.join(rule.backends)})" if rule.backends else "")


def skill_rule(rule: RuleRecord) -> SkillRule:
    return SkillRule(
        rule_id=rule.id,
        text=rule.text,
        occurrences=rule.occurrences,
        tasks=rule.tasks,
        status=rule.status,
        source=rule.source,
        scope=describe_scope(rule),
    )


def injected(
    rule: RuleRecord,
    config: MemoryConfig,
    triton: str,
    *,
    min_occurrences: int | None = None,
    min_tasks: int | None = None,
) -> bool:
    """Whether the rule goes into prompts: pinned rules always; retired never; curated (reproducer-backed)
    rules when their scope holds; others once seen `min_occurrences` times in `min_tasks` tasks, within
    scope. The paper preset counts occurrences only, whatever the scope."""
    if rule.status == "pinned":
        return True
    if rule.status == "retired":
        return False
    if config.preset == "paper":
        return rule.occurrences >= (min_occurrences or config.min_occurrences)
    if not rule.holds_for(triton):
        return False
    if rule.source == "curated":
        return True
    return rule.occurrences >= (min_occurrences or config.min_occurrences) and rule.tasks >= (
        min_tasks or config.min_tasks
    )


def seed_starter_memory(svc: Services) -> int:
    """Add the shipped, reproducer-backed rules to a memory that has never had them. Returns how many."""
    if svc.store.meta_get("starter_memory") is not None:
        return 0
    starter = load_starter()
    rules = [
        NewRule(
            text=r.text,
            tokens=tokens(r.text),
            source="curated",
            triton_min=r.triton,
            triton_max=r.triton,
            backends=(r.backend,),
            signatures=((r.signature_id, r.signature_key),),
        )
        for r in starter
    ]
    svc.store.add_rules(rules)
    svc.store.meta_set("starter_memory", str(len(rules)))
    return len(rules)


def described_failure(
    evaluation: Evaluation, code: str
) -> tuple[Signature, str, str, str, str, str | None, str | None]:
    """(signature, status, error type, error text, code, triton, backend) of an evaluated failure."""
    text = "\n".join(
        part for part in (evaluation.message, evaluation.error.traceback if evaluation.error else "") if part
    )
    backend = evaluation.backends[-1].value if evaluation.backends else None
    return (
        signature(evaluation, code),
        evaluation.status.value,
        evaluation.error.type if evaluation.error else "",
        text,
        code,
        evaluation.provenance.triton,
        backend,
    )


def _failed_with(evaluation: Evaluation) -> str:
    """How an evaluation failed, in one line: its status, and the error's type and first line."""
    error = evaluation.error
    first = (evaluation.message or "").strip().splitlines()[0] if (evaluation.message or "").strip() else ""
    kind = f"{error.type}: " if error is not None and error.type and error.type not in first else ""
    return f"{evaluation.status.value} ({kind}{first[:200]})" if first or kind else evaluation.status.value


# a version as Triton and pip write them: 3.6.0, 3.6, 3.6.0+git1a2b3c, 3.7.0.dev20261101
_VERSION = re.compile(r"\d+(?:\.\d+){0,3}(?:[.+-]?[A-Za-z0-9][A-Za-z0-9.+-]*)?")


def get_skill_memory(svc: Services, req: GetSkillMemoryRequest) -> GetSkillMemoryResult:
    """The rules injected for a scope (the running Triton by default), as a prompt block or as data.

    Raises:
        RequestError: the Triton version is not a version number.
    """
    if req.triton is not None and not _VERSION.fullmatch(req.triton):
        raise RequestError(f"triton must be a version number such as 3.6.0, not {req.triton[:40]!r}")
    seed_starter_memory(svc)
    config = svc.settings.memory
    triton = req.triton or running_triton()
    if re.fullmatch(r"\d+(\.\d+)?", triton):  # 3.6 is 3.6.0, as rules' scopes are written
        triton += ".0" * (2 - triton.count("."))
    # The answer is a function of the rules, the request and the settings: the last one is kept, and it is
    # served again until a rule changes (the headless loop asks at every step).
    key = (svc.store.rules_version(), req.model_dump_json(), config.model_dump_json(), triton)
    cached = svc.store.memo.get("skill_memory")
    if cached is not None and cached[0] == key and isinstance(cached[1], GetSkillMemoryResult):
        return cached[1]
    # The store filters by status and counts; scope and backend are checked here, in frequency order, until
    # enough rules are found (so a large memory costs no more than the rules it returns).
    floor_occurrences = req.min_occurrences or config.min_occurrences
    floor_tasks = 0 if config.preset == "paper" else (req.min_tasks or config.min_tasks)
    rules: list[RuleRecord] = []
    for rule in svc.store.rules_to_inject(min_occurrences=floor_occurrences, min_tasks=floor_tasks):
        if config.max_rules is not None and len(rules) == config.max_rules:
            break
        on_backend = req.backend is None or not rule.backends or req.backend in rule.backends or req.backend == "cuda"
        if on_backend and injected(rule, config, triton, min_occurrences=floor_occurrences, min_tasks=floor_tasks):
            rules.append(rule)
    if config.preset == "paper":
        rules.sort(key=lambda r: r.id)  # the authors listed their rules in the order they were made
    skills = [skill_rule(r) for r in rules]
    prompt = render_skill_memory([r.text for r in rules]) if req.format == "prompt" else None
    unconfirmed = (
        [skill_rule(r) for r in svc.store.rules(("active", "pinned")) if not r.scope_known]
        if req.format == "data"
        else []
    )
    result = GetSkillMemoryResult(
        triton=triton,
        min_occurrences=req.min_occurrences or config.min_occurrences,
        min_tasks=req.min_tasks or config.min_tasks,
        rules=skills,
        prompt=prompt,
        unconfirmed=unconfirmed,
    )
    svc.store.memo["skill_memory"] = (key, result)
    return result


async def confirm_rule(
    svc: Services, req: ConfirmRuleRequest, *, progress: Progress | None = None
) -> ConfirmRuleResult:
    """Back a rule with a reproducer: the reproducer is evaluated, and when it fails with a mistake no other
    rule covers, its signature joins the rule, the rule becomes curated, and its scope starts at the running
    Triton. This is how a rule imported with an unknown scope gets into prompts outside the paper preset.

    Raises:
        NotFoundError: the rule or task is unknown.
        RequestError: the reproducer does not fail, fails for the evaluator's own reasons, fails too
            generically to name one mistake, or fails with a mistake another rule covers.
    """
    rule = svc.store.rule(req.rule_id)
    task = parsed_task(svc, req.task_id)
    if not req.code.strip():
        raise RequestError("the reproducer is empty; give a module defining ModelNew that makes the rule's mistake")
    evaluation = await svc.evaluator.evaluate(task, req.code, EvaluationOptions(backend=req.backend), progress=progress)
    if evaluation.status is Status.ok:
        raise RequestError(
            f"the reproducer passed ({evaluation.message}); it must fail with the mistake rule {rule.id} describes"
        )
    if evaluation.status is Status.infra_error:
        raise RequestError(
            f"the evaluator failed on its own ({evaluation.message}); that says nothing about rule {rule.id}"
        )
    sig, status, error_type, text, code, triton, backend = described_failure(evaluation, req.code)
    if not sig.specific:
        raise RequestError(
            f"the reproducer failed with {evaluation.status.value}, but too generically to name one mistake "
            f"(signature {sig.key[:KEY_DISPLAY]!r}); make it fail with an error message of its own"
        )
    failed_with = _failed_with(evaluation)
    owner = svc.store.rule_for_signature(sig.id)
    if owner is not None and owner.id != rule.id:
        raise RequestError(
            f"the reproducer fails with the mistake of rule {owner.id} ({owner.text!r}), not of rule {rule.id}: "
            f"it failed with {failed_with}"
        )
    own = [key for _, key in svc.store.rule_signature_keys(rule.id)]
    if own and sig.id not in rule.signatures:
        raise RequestError(
            f"the reproducer does not fail by rule {rule.id}'s own signature, so it backs nothing: it failed with "
            f"{failed_with}, and rule {rule.id} is about {own[0][:KEY_DISPLAY]!r}"
            f"{f' (and {len(own) - 1} more)' if len(own) > 1 else ''}. Check that --task is the task the reproducer "
            "was written for and that it makes the rule's mistake"
        )
    confirmed = svc.store.confirm_rule(
        rule.id,
        task_id=req.task_id,
        signature=sig.id,
        signature_key=sig.key,
        status=status,
        error_type=error_type,
        error_text=text,
        code=code,
        triton=triton or running_triton(),
        backend=backend,
    )
    now_injected = injected(confirmed, svc.settings.memory, running_triton())
    again = (
        " (this reproducer was counted before, so the counts stay)" if confirmed.occurrences == rule.occurrences else ""
    )
    return ConfirmRuleResult(
        rule=skill_rule(confirmed),
        status=evaluation.status.value,
        signature=sig.id,
        signature_key=sig.key[:KEY_DISPLAY],
        injected=now_injected,
        message=(
            f"rule {confirmed.id} is backed by a reproducer that fails with {failed_with}; "
            f"scope {describe_scope(confirmed)}; {'injected into prompts' if now_injected else 'not injected'}{again}"
        ),
    )
