"""The skill memory's tools: record a failure (and the caller's rule), read the rules to inject, and
manage the memory (list, show, retire, pin, edit, export, import)."""

from __future__ import annotations

import functools
import importlib.metadata
import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from adaexplore.config import MemoryConfig
from adaexplore.errors import RequestError
from adaexplore.executor import Evaluation, Progress, Status
from adaexplore.memory import (
    NO_GUIDANCE,
    RuleCandidate,
    Signature,
    check_rule_text,
    load_starter,
    signature,
    signature_of_text,
    tokens,
)
from adaexplore.prompts import render_skill_memory
from adaexplore.store import NewRule, RuleRecord
from adaexplore.tools._service import Services, _task

__all__ = [
    "ConfirmRuleRequest",
    "ConfirmRuleResult",
    "GetSkillMemoryRequest",
    "GetSkillMemoryResult",
    "RecordFailureRequest",
    "RecordFailureResult",
    "SkillRule",
    "confirm_rule",
    "describe_scope",
    "export_memory",
    "get_skill_memory",
    "import_memory",
    "injected",
    "record_failure",
    "running_triton",
    "seed_starter_memory",
]

_DISPLAY = 4000


class RecordFailureRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_id: str
    node_id: int | None = Field(default=None, description="a failed node of a run (its code and evaluation)")
    evaluation: Evaluation | None = Field(default=None, description="or a failed evaluation, with code")
    code: str | None = None
    status: str | None = Field(default=None, description="or the status and error text, with code")
    error_type: str | None = None
    error_text: str | None = None
    rule: str | None = Field(default=None, description="your one sentence 'You cannot …', or 'no guidance'")


class SkillRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rule_id: int
    text: str
    occurrences: int
    tasks: int
    status: str
    source: str
    scope: str


class RecordFailureResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    failure_id: int | None
    signature: str | None
    signature_key: str | None
    merged_by: Literal["signature", "similarity", "judge", "new", "none"]
    rule: SkillRule | None
    injected: bool
    message: str


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
    rules: list[SkillRule]
    prompt: str | None


@functools.cache
def running_triton() -> str:
    """The installed Triton's version, read from its metadata once (nothing is imported)."""
    return importlib.metadata.version("triton")


def describe_scope(rule: RuleRecord) -> str:
    if not rule.scope_known:
        return "unknown"
    span = rule.triton_min if rule.triton_min == rule.triton_max else f"{rule.triton_min}–{rule.triton_max}"
    return f"triton {span}" + (f" ({', '.join(rule.backends)})" if rule.backends else "")


def _skill(rule: RuleRecord) -> SkillRule:
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


def _failure(svc: Services, req: RecordFailureRequest) -> tuple[Signature, str, str, str, str, str | None, str | None]:
    """(signature, status, error type, error text, code, triton, backend) of the failure described."""
    given = [req.node_id is not None, req.evaluation is not None, req.status is not None]
    if sum(given) != 1:
        raise RequestError(
            "describe the failure one way: node_id (a failed node), evaluation with code, or status "
            "and error_text with code"
        )
    if req.node_id is not None:
        node = svc.store.node(req.node_id)
        if svc.store.run(node.run_id).task_id != req.task_id:
            raise RequestError(f"node {req.node_id} belongs to a run of another task, not to task {req.task_id}")
        if node.evaluation_id is None:
            raise RequestError(f"node {req.node_id} has no evaluation (the root never has one)")
        evaluation = Evaluation.model_validate_json(svc.store.evaluation(node.evaluation_id).result)
        code = node.code
    elif req.evaluation is not None:
        evaluation, code = req.evaluation, req.code or ""
    else:
        text = req.error_text or ""
        if not text.strip():
            raise RequestError("the failure has no error text; give error_text (the message or traceback) as well")
        status = req.status or ""
        if status not in {s.value for s in Status}:
            raise RequestError(f"status {status!r} is not a verdict; use one of {', '.join(s.value for s in Status)}")
        sig = signature_of_text(status, req.error_type or "", text, req.code or "")
        return sig, status, req.error_type or "", text, req.code or "", None, None
    return _described(evaluation, code)


def _described(evaluation: Evaluation, code: str) -> tuple[Signature, str, str, str, str, str | None, str | None]:
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


async def record_failure(svc: Services, req: RecordFailureRequest) -> RecordFailureResult:
    """Store a failure and count it toward the rule it belongs to. Merging goes by signature, then by the
    similarity of the caller's rule text to existing rules, then (when configured) by a model judge; a new
    rule is made from the caller's text otherwise.

    Raises:
        NotFoundError: the task or node is unknown.
        RequestError: the failure is described ambiguously or not at all, nothing failed, or the rule text
            does not start with "You cannot".
    """
    svc.store.task(req.task_id)
    sig, status, error_type, text, code, triton, backend = _failure(svc, req)
    config = svc.settings.memory
    if status == Status.ok:
        raise RequestError("nothing failed: the evaluation is ok, so there is no rule to learn from it")
    if status == Status.infra_error:
        return RecordFailureResult(
            failure_id=None,
            signature=None,
            signature_key=None,
            merged_by="none",
            rule=None,
            injected=False,
            message="not recorded: infrastructure failures are the evaluator's, "
            "never the kernel's, and never make or count toward rules",
        )
    try:
        rule_text = check_rule_text(req.rule) if req.rule is not None else None
    except ValueError as exc:
        raise RequestError(str(exc)) from exc
    seed_starter_memory(svc)
    running = triton or running_triton()
    merged_by: Literal["signature", "similarity", "judge", "new", "none"] = "none"
    target: int | NewRule | None = None
    existing = svc.store.rule_for_signature(sig.id) if sig.specific else None
    if existing is not None:
        target, merged_by = existing.id, "signature"
    elif rule_text is not None:
        words = tokens(rule_text)
        similar = svc.store.similar_rules(words, floor=min(config.judge_floor, config.similarity_threshold))
        if similar and similar[0][2] >= config.similarity_threshold:
            target, merged_by = similar[0][0], "similarity"
        elif svc.judge is not None and (close := [c for c in similar if c[2] >= config.judge_floor]):
            chosen = await svc.judge.same_rule(rule_text, [RuleCandidate(i, t, s) for i, t, s in close])
            if chosen is not None and chosen in {c[0] for c in close}:
                target, merged_by = chosen, "judge"
        if target is None:
            target, merged_by = NewRule(text=rule_text, tokens=words), "new"
    failure_id, rule_id = svc.store.record_failure(
        task_id=req.task_id,
        signature=sig.id,
        signature_key=sig.key,
        specific=sig.specific,
        status=status,
        error_type=error_type,
        error_text=text,
        code=code,
        triton=running,
        backend=backend,
        rule=target,
    )
    rule = svc.store.rule(rule_id) if rule_id is not None else None
    now_injected = rule is not None and injected(rule, config, running)
    if rule is None:
        hint = "no rule yet for this failure" + (
            ""
            if req.rule and req.rule.lower().startswith(NO_GUIDANCE)
            else "; give a one-sentence rule 'You cannot …' to start one"
        )
        message = f"failure {failure_id} recorded with signature {sig.id}; {hint}"
    else:
        message = (
            f"counted toward rule {rule.id} ({merged_by}): seen {rule.occurrences} times in {rule.tasks} "
            f"task(s); {'injected into prompts' if now_injected else 'not injected yet'}"
        )
    return RecordFailureResult(
        failure_id=failure_id,
        signature=sig.id,
        signature_key=sig.key[:_DISPLAY],
        merged_by=merged_by,
        rule=_skill(rule) if rule else None,
        injected=now_injected,
        message=message,
    )


def get_skill_memory(svc: Services, req: GetSkillMemoryRequest) -> GetSkillMemoryResult:
    """The rules injected for a scope (the running Triton by default), as a prompt block or as data."""
    seed_starter_memory(svc)
    config = svc.settings.memory
    triton = req.triton or running_triton()
    # The answer is a function of the rules, the request and the settings: the last one is kept, and it is
    # served again until a rule changes (the headless loop asks at every step).
    key = (svc.store.rules_version(), req.model_dump_json(), config.model_dump_json(), triton)
    cached = svc.store.memo.get("skill_memory")
    if cached is not None and cached[0] == key:
        return cached[1]  # type: ignore[return-value]
    # The store filters by status and counts; scope and backend are checked here, in frequency order, until
    # enough rules are found (so a large memory costs no more than the rules it returns).
    floor_occurrences = req.min_occurrences or config.min_occurrences
    floor_tasks = 0 if config.preset == "paper" else (req.min_tasks or config.min_tasks)
    rules: list[RuleRecord] = []
    for rule in svc.store.rules_to_inject(min_occurrences=floor_occurrences, min_tasks=floor_tasks):
        if len(rules) == config.max_rules:
            break
        on_backend = req.backend is None or not rule.backends or req.backend in rule.backends or req.backend == "cuda"
        if on_backend and injected(rule, config, triton, min_occurrences=floor_occurrences, min_tasks=floor_tasks):
            rules.append(rule)
    skills = [_skill(r) for r in rules]
    prompt = render_skill_memory([r.text for r in rules]) if req.format == "prompt" else None
    result = GetSkillMemoryResult(
        triton=triton,
        min_occurrences=req.min_occurrences or config.min_occurrences,
        min_tasks=req.min_tasks or config.min_tasks,
        rules=skills,
        prompt=prompt,
    )
    svc.store.memo["skill_memory"] = (key, result)
    return result


# ---- export and import -------------------------------------------------------------------------------
def export_memory(svc: Services, fmt: Literal["adaexplore", "paper"] = "adaexplore") -> str:
    """The memory as text: our JSON format (everything), or the authors' `rule||count` lines."""
    rules = svc.store.rules()
    if fmt == "paper":
        return "".join(f"{r.text}||{r.occurrences}\n" for r in rules if r.status != "retired")
    return (
        json.dumps(
            {
                "format": "adaexplore-memory",
                "version": 1,
                "rules": [
                    {
                        "text": r.text,
                        "status": r.status,
                        "source": r.source,
                        "triton_min": r.triton_min,
                        "triton_max": r.triton_max,
                        "backends": r.backends,
                        "occurrences": r.occurrences,
                        "tasks": svc.store.rule_task_ids(r.id),
                        "signatures": svc.store.rule_signature_keys(r.id),
                    }
                    for r in rules
                ],
            },
            indent=1,
        )
        + "\n"
    )


def import_memory(svc: Services, text: str) -> tuple[int, int]:
    """Import rules from our JSON format or the authors' `rule||count` lines, all or nothing. Rules whose text
    is already in the memory are skipped. Rules from `rule||count` lines are marked imported, scope unknown.
    Returns (imported, skipped).

    Raises:
        RequestError: the text is neither format; the message names the line that failed.
    """
    known = {r.text for r in svc.store.rules()}
    rules = _parse_ours(text) if text.lstrip().startswith("{") else _parse_paper(text)
    fresh = [r for r in rules if r.text not in known]
    svc.store.add_rules(fresh)
    return len(fresh), len(rules) - len(fresh)


def _parse_paper(text: str) -> list[NewRule]:
    rules = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        body, sep, count = line.rpartition("||")
        if not sep or not body.strip() or not count.strip().isdigit():
            raise RequestError(f"line {number} is not 'rule text||count': {line[:120]!r}; nothing was imported")
        rules.append(
            NewRule(text=" ".join(body.split()), tokens=tokens(body), source="imported", occurrences=int(count.strip()))
        )
    if not rules:
        raise RequestError("the file holds no rules; nothing was imported")
    return rules


def _parse_ours(text: str) -> list[NewRule]:
    try:
        data = json.loads(text)
        if data.get("format") != "adaexplore-memory":
            raise ValueError("not an adaexplore memory export (no 'format': 'adaexplore-memory')")
        rules = []
        for number, item in enumerate(data["rules"], start=1):
            try:
                if item["status"] not in ("active", "retired", "pinned") or item["source"] not in (
                    "distilled",
                    "imported",
                    "curated",
                ):
                    raise ValueError(f"status {item['status']!r} or source {item['source']!r} is not known")
                rules.append(
                    NewRule(
                        text=item["text"],
                        tokens=tokens(item["text"]),
                        source=item["source"],
                        status=item["status"],
                        triton_min=item.get("triton_min"),
                        triton_max=item.get("triton_max"),
                        backends=tuple(item.get("backends", ())),
                        occurrences=int(item["occurrences"]),
                        task_ids=tuple(item.get("tasks", ())),
                        signatures=tuple((s[0], s[1]) for s in item.get("signatures", ())),
                    )
                )
            except (KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"rule {number}: {exc!r}") from exc
        return rules
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise RequestError(f"the file is not a valid adaexplore memory export: {exc}; nothing was imported") from exc


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
    task = _task(svc, req.task_id)
    if not req.code.strip():
        raise RequestError("the reproducer is empty; give a module defining ModelNew that makes the rule's mistake")
    evaluation = await svc.evaluator.evaluate(task, req.code, backend=req.backend, progress=progress)
    if evaluation.status is Status.ok:
        raise RequestError(
            f"the reproducer passed ({evaluation.message}); it must fail with the mistake rule {rule.id} describes"
        )
    if evaluation.status is Status.infra_error:
        raise RequestError(
            f"the evaluator failed on its own ({evaluation.message}); that says nothing about rule {rule.id}"
        )
    sig, status, error_type, text, code, triton, backend = _described(evaluation, req.code)
    if not sig.specific:
        raise RequestError(
            f"the reproducer failed with {evaluation.status.value}, but too generically to name one mistake "
            f"(signature {sig.key[:_DISPLAY]!r}); make it fail with an error message of its own"
        )
    owner = svc.store.rule_for_signature(sig.id)
    if owner is not None and owner.id != rule.id:
        raise RequestError(
            f"the reproducer fails with the mistake of rule {owner.id} ({owner.text!r}), not of rule {rule.id}"
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
    return ConfirmRuleResult(
        rule=_skill(confirmed),
        status=evaluation.status.value,
        signature=sig.id,
        signature_key=sig.key[:_DISPLAY],
        injected=now_injected,
        message=(
            f"rule {confirmed.id} is backed by a reproducer that fails with {evaluation.status.value}; "
            f"scope {describe_scope(confirmed)}; {'injected into prompts' if now_injected else 'not injected'}"
        ),
    )
