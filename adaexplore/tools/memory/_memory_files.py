"""The skill memory as a file: export it in our JSON format or the authors' `rule||count` lines, and import either,
all or nothing."""

from __future__ import annotations

import json
import math
from typing import Any, Literal, NamedTuple

from adaexplore.domain import Backend
from adaexplore.errors import RequestError
from adaexplore.memory import Signature, tokens
from adaexplore.store import NewRule, version_key
from adaexplore.tools._service import Services

__all__ = ["ImportResult", "export_memory", "import_memory"]


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


class ImportResult(NamedTuple):
    """What an import did: rules added, rules already present (their text is in the memory), duplicates in
    the file merged into one rule each, pinned rules added as active, and present rules whose counts, tasks,
    signatures or status the file raised."""

    imported: int
    skipped: int
    merged: int = 0
    unpinned: int = 0
    updated: int = 0


# Counts beyond this are no one's real tally, and would overflow SQLite's integers once added to.
_MAX_COUNT = 10**12
_STATUSES = ("active", "retired", "pinned")
_SOURCES = ("distilled", "imported", "curated")
_FIELDS = {"text", "status", "source", "triton_min", "triton_max", "backends", "occurrences", "tasks", "signatures"}


def import_memory(svc: Services, text: str) -> ImportResult:
    """Import rules from our JSON format or the authors' `rule||count` lines, all or nothing.

    Every imported rule is marked `imported` with an unknown scope, whatever the file says about its source,
    scope and backends: it is counted, and it keeps the signatures and tasks our format lists, but it is not
    injected (outside the `paper` preset) until `confirm_rule` backs it with a reproducer on this Triton. For
    the same reason a pinned rule comes in active; a retired one stays retired. Rules whose text appears
    more than once in the file are merged into one, their counts added up (and in our format their tasks and
    signatures joined). A rule whose text is already in the memory keeps its own source, scope and status,
    and takes the file's evidence: its occurrences rise to the file's count where that is higher (importing
    the same file twice counts it once), the file's tasks and signatures join it, and a rule retired in the
    file is retired here too.

    Raises:
        RequestError: the text is neither format, or a line or rule in it is malformed; the message names
            the line or rule that failed, and nothing is imported.
    """
    present = {" ".join(r.text.split()): r for r in svc.store.rules()}
    parsed = _parse_ours(text) if text.lstrip().startswith("{") else _parse_paper(text)
    rules = _merge_duplicates(parsed)
    fresh = [r for r in rules if r.text not in present]
    merge = [(present[r.text], r) for r in rules if r.text in present]
    unpinned = sum(r.status == "pinned" for r in fresh)
    for rule in fresh:
        rule.source, rule.triton_min, rule.triton_max, rule.backends = "imported", None, None, ()
        rule.status = "active" if rule.status == "pinned" else rule.status

    def evidence(rule_id: int) -> tuple[object, ...]:
        record = svc.store.rule(rule_id)
        return record.occurrences, record.status, record.tasks, len(svc.store.rule_signature_keys(rule_id))

    before = {rule.id: evidence(rule.id) for rule, _ in merge}
    svc.store.add_rules(fresh, merge=[(rule.id, other) for rule, other in merge])
    updated = sum(evidence(rule_id) != seen for rule_id, seen in before.items())
    return ImportResult(len(fresh), len(merge), len(parsed) - len(rules), unpinned, updated)


def _merge_duplicates(rules: list[NewRule]) -> list[NewRule]:
    """One rule per text, in the order first seen: occurrences added up, tasks, signatures and backends
    joined, and the first rule's status kept."""
    by_text: dict[str, NewRule] = {}
    for rule in rules:
        first = by_text.setdefault(rule.text, rule)
        if first is rule:
            continue
        first.occurrences = min(first.occurrences + rule.occurrences, _MAX_COUNT)
        first.task_ids = tuple(dict.fromkeys(first.task_ids + rule.task_ids))
        first.signatures = tuple(dict.fromkeys(first.signatures + rule.signatures))
        first.backends = tuple(dict.fromkeys(first.backends + rule.backends))
    return list(by_text.values())


def _whole_count(value: object) -> int | None:
    """A count given as 34 or 34.0 (the authors' file writes floats); None for anything else: a fraction, a
    negative number, NaN, infinity, a count past `_MAX_COUNT`, or not a number at all."""
    if isinstance(value, str):
        try:
            value = int(value) if value.strip().isdigit() else float(value)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            return None
        value = int(value)
    return value if 0 <= value <= _MAX_COUNT else None


def _parse_paper(text: str) -> list[NewRule]:
    rules = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        body, sep, raw = line.rpartition("||")
        if not sep or not body.strip():
            raise RequestError(f"line {number} is not 'rule text||count': {line[:120]!r}; nothing was imported")
        count = _whole_count(raw)
        if count is None:
            raise RequestError(
                f"line {number}: the count {raw.strip()[:40]!r} is not a whole number from 0 to {_MAX_COUNT} "
                f"(34 and 34.0 are; 34.5, -1 and nan are not); nothing was imported"
            )
        clean = " ".join(body.split())
        if not clean.startswith("You cannot "):
            raise RequestError(
                f"line {number}: a rule is a sentence that starts with 'You cannot …'; got {clean[:80]!r}; nothing "
                "was imported"
            )
        rules.append(NewRule(text=clean, tokens=tokens(clean), source="imported", occurrences=count))
    if not rules:
        raise RequestError("the file holds no rules; nothing was imported")
    return rules


def _parse_ours(text: str) -> list[NewRule]:
    def refuse(problem: str) -> RequestError:
        return RequestError(f"the file is not a valid adaexplore memory export: {problem}; nothing was imported")

    try:
        data = json.loads(text)
    except ValueError as exc:  # JSONDecodeError, and a number too long to convert
        raise refuse(f"it is not JSON ({exc})") from exc
    if not isinstance(data, dict) or data.get("format") != "adaexplore-memory":
        raise refuse('it has no "format": "adaexplore-memory"')
    version = data.get("version", 1)
    if type(version) is not int or version != 1:  # true and 1.0 are equal to 1 in Python, yet no version we wrote
        raise refuse(
            f"version {json.dumps(version)[:40]} is not one this adaexplore reads (it reads version 1, written as "
            "the number 1)"
        )
    if not isinstance(data.get("rules"), list):
        raise refuse('"rules" is not a list of rules')
    rules = []
    owners: dict[str, tuple[int, str]] = {}  # signature id -> the first rule listing it, and its text
    for number, item in enumerate(data["rules"], start=1):
        try:
            rule = _rule_from_json(item)
        except ValueError as exc:
            raise refuse(f"rule {number}: {exc}") from None
        for signature_id, _ in rule.signatures:
            other, other_text = owners.setdefault(signature_id, (number, rule.text))
            if other_text != rule.text:
                raise refuse(
                    f"rule {number}: its signature {signature_id} is listed by rule {other} too, whose text differs; "
                    "a signature belongs to one rule"
                )
        rules.append(rule)
    return rules


def _shown(value: object) -> str:
    shown = repr(value)
    return shown if len(shown) <= 80 else shown[:79] + "…"


def _rule_from_json(item: Any) -> NewRule:
    """One rule of our format, every field checked; raises ValueError saying which field is wrong and how."""
    if not isinstance(item, dict):
        raise ValueError(f"it is {type(item).__name__}, not an object")
    unknown = sorted(set(item) - _FIELDS)
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(unknown)}; the fields are {', '.join(sorted(_FIELDS))}")
    missing = [k for k in ("text", "status", "source", "occurrences") if k not in item]
    if missing:
        raise ValueError(f"it lacks {', '.join(missing)}")
    text = item["text"]
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"text {_shown(text)} is not a sentence")
    if not " ".join(text.split()).startswith("You cannot "):
        raise ValueError(f"text {_shown(text)} does not start with 'You cannot …', as every rule does")
    if item["status"] not in _STATUSES:
        raise ValueError(f"status {_shown(item['status'])} is not one of {', '.join(_STATUSES)}")
    if item["source"] not in _SOURCES:
        raise ValueError(f"source {_shown(item['source'])} is not one of {', '.join(_SOURCES)}")
    occurrences = _whole_count(item["occurrences"])
    if occurrences is None:
        raise ValueError(f"occurrences {_shown(item['occurrences'])} is not a whole number from 0 to {_MAX_COUNT}")
    for bound in ("triton_min", "triton_max"):
        value = item.get(bound)
        if value is not None and (not isinstance(value, str) or not version_key(value)):
            raise ValueError(f"{bound} {_shown(value)} is not a Triton version such as '3.6.0' (or null)")
    backends = item.get("backends", [])
    known_backends = [b.value for b in Backend]
    if not isinstance(backends, list) or any(b not in known_backends for b in backends):
        raise ValueError(f"backends {_shown(backends)} is not a list of {', '.join(known_backends)}")
    tasks = item.get("tasks", [])
    if not isinstance(tasks, list) or not all(isinstance(t, str) and t for t in tasks):
        raise ValueError(f"tasks {_shown(tasks)} is not a list of task ids")
    signatures = item.get("signatures", [])
    if not isinstance(signatures, list) or not all(
        isinstance(s, list) and len(s) == 2 and all(isinstance(part, str) for part in s) for s in signatures
    ):
        raise ValueError(f"signatures {_shown(signatures)} is not a list of [id, key] pairs of strings")
    for signature_id, key in signatures:
        if Signature(key).id != signature_id:
            raise ValueError(f"signature {signature_id!r} is not the id of its key {key[:80]!r}")
    clean = " ".join(text.split())
    return NewRule(
        text=clean,
        tokens=tokens(clean),
        source=item["source"],
        status=item["status"],
        triton_min=item.get("triton_min"),
        triton_max=item.get("triton_max"),
        backends=tuple(backends),
        occurrences=occurrences,
        task_ids=tuple(dict.fromkeys(tasks)),
        signatures=tuple((s[0], s[1]) for s in signatures),
    )
