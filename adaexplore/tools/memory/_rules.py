"""The rules of the skill memory one at a time: list them, show one with its evidence, retire, pin or activate
it, and edit its sentence (`adaexplore memory list|show|retire|pin|activate|edit`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from adaexplore.errors import RequestError
from adaexplore.memory import check_rule_text, tokens
from adaexplore.store import FailureRecord, RuleRecord
from adaexplore.tools._service import Services

__all__ = [
    "FailureRecord",
    "RuleDetail",
    "RuleRecord",
    "RuleStatus",
    "edit_rule",
    "list_rules",
    "rule_detail",
    "set_rule_status",
]

RuleStatus = Literal["active", "pinned", "retired"]


def list_rules(svc: Services, statuses: tuple[RuleStatus, ...] = ("active", "pinned", "retired")) -> list[RuleRecord]:
    """The rules with one of `statuses`, in id order."""
    return svc.store.rules(statuses)


@dataclass(frozen=True)
class RuleDetail:
    """One rule with its evidence: the failure signatures it covers (id, key) and its latest failures."""

    rule: RuleRecord
    signatures: list[tuple[str, str]]
    failures: list[FailureRecord]


def rule_detail(svc: Services, rule_id: int, *, failures: int = 3) -> RuleDetail:
    """Raises: NotFoundError: the rule id is unknown."""
    rule = svc.store.rule(rule_id)
    return RuleDetail(rule, svc.store.rule_signature_keys(rule.id), svc.store.failures(rule.id, limit=failures))


def set_rule_status(svc: Services, rule_id: int, status: RuleStatus) -> RuleRecord:
    """Raises: NotFoundError: the rule id is unknown."""
    return svc.store.set_rule_status(rule_id, status)


def edit_rule(svc: Services, rule_id: int, text: str) -> RuleRecord:
    """Give a rule a new sentence.

    Raises:
        NotFoundError: the rule id is unknown.
        RequestError: the text is not a "You cannot …" sentence, is "no guidance", or is another rule's already.
    """
    try:
        checked = check_rule_text(text)
    except ValueError as exc:
        raise RequestError(str(exc)) from exc
    if checked is None:
        raise RequestError("a rule's text cannot be 'no guidance'; retire the rule instead")
    return svc.store.set_rule_text(rule_id, checked, tokens(checked))
