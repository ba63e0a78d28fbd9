"""record_failure: store a failure and count it toward the rule it belongs to, keeping the caller's sentence as
its own rule where it says more than that rule does; a timeout makes no rule unless its sentence names a Triton
mistake."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from adaexplore.errors import RequestError
from adaexplore.executor import Evaluation, Status
from adaexplore.memory import (
    NO_GUIDANCE,
    RuleCandidate,
    Signature,
    check_rule_text,
    constructs,
    jaccard,
    more_specific,
    names_triton_mistake,
    signature_of_text,
    tokens,
)
from adaexplore.store import NewRule, RuleRecord
from adaexplore.tools._service import Services
from adaexplore.tools.memory._memory import (
    KEY_DISPLAY,
    SkillRule,
    described_failure,
    injected,
    running_triton,
    seed_starter_memory,
    skill_rule,
)

__all__ = ["RecordFailureRequest", "RecordFailureResult", "record_failure"]

MergedBy = Literal["signature", "similarity", "judge", "new", "none"]


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


class RecordFailureResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    failure_id: int | None
    signature: str | None
    signature_key: str | None
    merged_by: MergedBy
    rule: SkillRule | None
    injected: bool
    message: str


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
    described = described_failure(evaluation, code)
    if not described[2].strip() and not described[3].strip():
        # As with error_text: a failure with nothing to tell it by cannot be told from any other.
        where = f"node {req.node_id}'s evaluation" if req.node_id is not None else "the evaluation"
        raise RequestError(
            f"the failure has no error text: {where} has an empty message and no error; give status and "
            "error_text (the message or traceback) with code instead"
        )
    return described


@dataclass(frozen=True)
class _Choice:
    """The rule a failure counts toward: an existing rule's id, a new rule, or none; how it was found; the rule
    owning the failure's signature when the failure's rule is a more specific sentence for its mistake; and
    what became of the caller's sentence when it was not kept (said in the answer)."""

    target: int | NewRule | None
    merged_by: MergedBy
    refines: RuleRecord | None = None
    note: str = ""


def _not_a_triton_rule(text: str) -> str:
    return (
        f"your sentence {text[:120]!r} made no rule: a timeout (the kernel ran past its time or its budget) is "
        "not a Triton rule unless the sentence names the Triton mistake that made it hang or run long (a loop "
        "that never ends, a spin on another program, an atomic lock, a grid or tiles far too large, a tl. call)"
    )


async def _choose(svc: Services, sig: Signature, rule_text: str | None) -> _Choice:
    """Signature first; then the caller's sentence: the same sentence, a rule alike in words (token overlap at
    `similarity_threshold`), the one a configured model judge names, else a new rule."""
    config = svc.settings.memory
    owner = svc.store.rule_for_signature(sig.id) if sig.specific else None
    if owner is not None:
        return await _within_signature(svc, sig, owner, rule_text)
    if rule_text is None:
        return _Choice(None, "none")
    words = tokens(rule_text)
    same = svc.store.rule_with_text(rule_text)  # even a sentence of stop words alone, which has no tokens
    if same is not None:
        return _Choice(same.id, "similarity")
    similar = svc.store.similar_rules(words, floor=min(config.judge_floor, config.similarity_threshold))
    if similar and similar[0][2] >= config.similarity_threshold:
        return _Choice(similar[0][0], "similarity")
    if svc.judge is not None and (close := [c for c in similar if c[2] >= config.judge_floor]):
        chosen = await svc.judge.same_rule(rule_text, [RuleCandidate(i, t, s) for i, t, s in close])
        if chosen is not None and chosen in {c[0] for c in close}:
            return _Choice(chosen, "judge")
    return _Choice(NewRule(text=rule_text, tokens=words), "new")


async def _within_signature(svc: Services, sig: Signature, owner: RuleRecord, rule_text: str | None) -> _Choice:
    """The failure has the signature of rule `owner`. The caller's sentence goes to `owner` when it reads like it,
    to a more specific sentence kept for this mistake before when it reads like that one, and is kept as a rule of
    its own when it names code `owner`'s sentence does not mention; otherwise it says nothing `owner` does not,
    and the failure is `owner`'s."""
    if rule_text is None or rule_text == owner.text:
        return _Choice(owner.id, "signature")
    same = svc.store.rule_with_text(rule_text)  # one sentence is one rule
    if same is not None:
        return _Choice(same.id, "similarity", refines=owner)
    config = svc.settings.memory
    words = tokens(rule_text)
    family = [owner, *svc.store.rules_refining(sig.id, owner.id)]
    scored = sorted(((jaccard(words, tokens(r.text)), r) for r in family), key=lambda s: -s[0])
    best, rule = scored[0]
    if best >= config.similarity_threshold:
        return _Choice(rule.id, "signature", None) if rule.id == owner.id else _Choice(rule.id, "similarity", owner)
    close = [(s, r) for s, r in scored if s >= config.judge_floor]
    if svc.judge is not None and close:
        chosen = await svc.judge.same_rule(rule_text, [RuleCandidate(r.id, r.text, s) for s, r in close])
        if chosen == owner.id:
            return _Choice(owner.id, "judge")
        if chosen is not None and chosen in {r.id for _, r in close}:
            return _Choice(chosen, "judge", refines=owner)
    if owner.status == "retired":
        return _Choice(
            owner.id,
            "signature",
            note=f"your sentence was not kept: rule {owner.id} has this mistake's signature and is retired, and a "
            "retired mistake starts no second rule",
        )
    if more_specific(rule_text, owner.text):
        # a rule that reads like it, kept for another signature's failures, rather than a second sentence alike
        alike = svc.store.similar_rules(words, limit=1, floor=config.similarity_threshold)
        if alike and alike[0][0] != owner.id:
            return _Choice(alike[0][0], "similarity", refines=owner)
        return _Choice(NewRule(text=rule_text, tokens=words), "new", refines=owner)
    return _Choice(
        owner.id,
        "signature",
        note=f"your sentence was not kept apart: it names no code that rule {owner.id}'s sentence, whose signature "
        "it has, lacks (name the tl. call, argument or setting that made the mistake to keep it as a rule of its own)",
    )


async def record_failure(svc: Services, req: RecordFailureRequest) -> RecordFailureResult:
    """Store a failure and count it toward the rule it belongs to. Merging goes by signature, then by the
    similarity of the caller's rule text to existing rules, then (when configured) by a model judge; a new
    rule is made from the caller's text otherwise. A sentence more specific than the rule its signature
    matches (it names code that rule does not) is kept as its own rule, and both rules are counted. A
    timeout's sentence makes a rule only when it names a Triton mistake. A retired rule is matched like any
    other: the failure counts toward it, it stays retired (never injected), and no second rule with its
    mistake is made.

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
    dropped = ""
    if status == Status.timeout and rule_text is not None and not names_triton_mistake(rule_text):
        dropped, rule_text = _not_a_triton_rule(rule_text), None
    seed_starter_memory(svc)
    running = triton or running_triton()
    earlier = svc.store.failure_of_node(req.node_id) if req.node_id is not None else None
    if earlier is not None and (earlier.rule_id is not None or rule_text is None):
        # Sent again (a client's retry, say): a node's failure counts once.
        kept = svc.store.rule(earlier.rule_id) if earlier.rule_id is not None else None
        counts = (
            f"; rule {kept.id} stays at {kept.occurrences} occurrences in {kept.tasks} task(s)"
            if kept is not None
            else (
                f"; {dropped}"
                if dropped
                else "; it has no rule yet: give a one-sentence rule 'You cannot …' to start one"
            )
        )
        return RecordFailureResult(
            failure_id=earlier.id,
            signature=sig.id,
            signature_key=sig.key[:KEY_DISPLAY],
            merged_by="none",
            rule=skill_rule(kept) if kept else None,
            injected=kept is not None and injected(kept, config, running),
            message=f"node {req.node_id}'s failure was recorded already (failure {earlier.id}) and counts once"
            + counts,
        )
    choice = await _choose(svc, sig, rule_text)
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
        rule=choice.target,
        node_id=req.node_id,
        refines=choice.refines.id if choice.refines is not None else None,
    )
    rule = svc.store.rule(rule_id) if rule_id is not None else None
    now_injected = rule is not None and injected(rule, config, running)
    return RecordFailureResult(
        failure_id=failure_id,
        signature=sig.id,
        signature_key=sig.key[:KEY_DISPLAY],
        merged_by=choice.merged_by,
        rule=skill_rule(rule) if rule else None,
        injected=now_injected,
        message=_message(req, failure_id, sig, rule, choice, now_injected, dropped),
    )


def _message(
    req: RecordFailureRequest,
    failure_id: int,
    sig: Signature,
    rule: RuleRecord | None,
    choice: _Choice,
    now_injected: bool,
    dropped: str,
) -> str:
    if rule is None:
        if dropped:
            return f"failure {failure_id} recorded with signature {sig.id}; {dropped}"
        hint = "no rule yet for this failure" + (
            ""
            if req.rule and req.rule.lower().startswith(NO_GUIDANCE)
            else "; give a one-sentence rule 'You cannot …' to start one"
        )
        return f"failure {failure_id} recorded with signature {sig.id}; {hint}"
    note = f"; {choice.note}" if choice.note else ""
    if rule.status == "retired":
        return (
            f"counted toward rule {rule.id} ({choice.merged_by}), which is retired: seen {rule.occurrences} times in "
            f"{rule.tasks} task(s), and never injected while retired (`adaexplore memory activate {rule.id}` "
            f"lets its counts decide again){note}"
        )
    counts = (
        f"seen {rule.occurrences} times in {rule.tasks} task(s); "
        f"{'injected into prompts' if now_injected else 'not injected yet'}"
    )
    if choice.refines is None:
        return f"counted toward rule {rule.id} ({choice.merged_by}): {counts}{note}"
    general = choice.refines
    named = ", ".join(sorted(n for n in constructs(rule.text) if n not in general.text.lower()))
    kept = "kept as its own rule" if choice.merged_by == "new" else "counted toward rule"
    return (
        f"{kept} {rule.id} ({choice.merged_by}), more specific than rule {general.id}, whose signature it shares"
        f"{f' (it names {named})' if named else ''}: {counts}; rule {general.id} is counted too{note}"
    )
