"""The skill memory's tables: rules, the signatures they cover, the tasks they were seen in, and failures (the
records and the reads are in _rule_reads; the writes are here)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from adaexplore.errors import RequestError
from adaexplore.store._db import Database
from adaexplore.store._rule_reads import FailureRecord, NewRule, RuleReads, RuleRecord, version_key

__all__ = ["FailureRecord", "MemoryTables", "NewRule", "RuleRecord", "version_key"]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class MemoryTables(RuleReads):
    """Mixed into the store: it shares the store's connection and its one-writer transactions."""

    _write: Callable[[], contextlib.AbstractContextManager[Database]]  # the store's transaction

    # writing -------------------------------------------------------------------------------------
    def _insert_rule(self, db: Database, rule: NewRule) -> int:
        now = _now()
        rule_id = db.insert(
            "INSERT INTO rules (text, status, source, triton_min, triton_max, backends, occurrences, tasks, "
            "token_count, first_seen, last_seen, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                rule.text,
                rule.status,
                rule.source,
                rule.triton_min,
                rule.triton_max,
                json.dumps(sorted(rule.backends)),
                rule.occurrences,
                0,
                len(rule.tokens),
                now if rule.occurrences else None,
                now if rule.occurrences else None,
                now,
            ),
        )
        db.executemany("INSERT INTO rule_tokens VALUES (?, ?)", [(t, rule_id) for t in sorted(rule.tokens)])
        index = self._bump(db)
        if index is not None:
            for word in rule.tokens:
                index.postings.setdefault(word, set()).add(rule_id)
            index.words[rule_id] = set(rule.tokens)
        for task_id in rule.task_ids:
            db.execute("INSERT INTO rule_tasks VALUES (?, ?) ON CONFLICT DO NOTHING", (rule_id, task_id))
        db.execute(
            "UPDATE rules SET tasks=(SELECT COUNT(*) FROM rule_tasks WHERE rule_id=?) WHERE id=?", (rule_id, rule_id)
        )
        for signature, key in rule.signatures:
            db.execute("INSERT INTO rule_signatures VALUES (?, ?, ?) ON CONFLICT DO NOTHING", (signature, rule_id, key))
        return rule_id

    def record_failure(
        self,
        *,
        task_id: str,
        signature: str,
        signature_key: str,
        specific: bool,
        status: str,
        error_type: str,
        error_text: str,
        code: str,
        triton: str | None,
        backend: str | None,
        rule: int | NewRule | None,
        node_id: int | None = None,
        refines: int | None = None,
    ) -> tuple[int, int | None]:
        """Store a failure and count it toward its rule (an existing one by id, or a new one), in one
        transaction. Returns (failure id, rule id).

        `refines` is the rule that owns the failure's signature when `rule` is a more specific sentence for
        that mistake: the failure is `rule`'s, the signature stays with `refines`, and `refines` is counted
        too (the mistake it names was seen again).

        A node's failure is stored once. Sent again, it is not counted again: the stored failure's rule is
        returned, except that a failure stored without a rule joins the rule given now and counts for it.
        """
        with self._write() as db:
            earlier = (
                db.execute("SELECT id, rule_id FROM failures WHERE node_id=?", (node_id,)).fetchone()
                if node_id is not None
                else None
            )
            if earlier is not None and (earlier["rule_id"] is not None or rule is None):
                return earlier["id"], earlier["rule_id"]
            rule_id = self._insert_rule(db, rule) if isinstance(rule, NewRule) else rule
            if earlier is not None:
                assert rule_id is not None
                db.execute("UPDATE failures SET rule_id=? WHERE id=?", (rule_id, earlier["id"]))
                self._count_toward(
                    db,
                    rule_id,
                    specific=specific and refines is None,
                    signature=signature,
                    key=signature_key,
                    task_id=task_id,
                    triton=triton,
                    backend=backend,
                )
                failure_id = earlier["id"]
            else:
                failure_id = self._add_failure(
                    db,
                    rule_id,
                    specific=specific and refines is None,
                    row=(task_id, signature, signature_key, status, error_type, error_text, code, triton, backend),
                    node_id=node_id,
                )
            if refines is not None and rule_id is not None and refines != rule_id:
                self._count(db, refines, task_id, triton, backend)
        return failure_id, rule_id

    def confirm_rule(
        self,
        rule_id: int,
        *,
        task_id: str,
        signature: str,
        signature_key: str,
        status: str,
        error_type: str,
        error_text: str,
        code: str,
        triton: str,
        backend: str | None,
    ) -> RuleRecord:
        """Back a rule with a reproducer's failure, in one transaction: the failure is stored and counted,
        its signature joins the rule's, and the rule becomes curated with its scope starting at `triton`
        (an imported rule's unknown scope becomes known). The same reproducer (code, task and signature) is
        counted once, however often it confirms the rule. Returns the rule as it is now."""
        self.rule(rule_id)
        with self._write() as db:
            owner = db.execute("SELECT rule_id FROM rule_signatures WHERE signature=?", (signature,)).fetchone()
            if owner is not None and owner["rule_id"] != rule_id:
                raise RequestError(
                    f"the reproducer's failure (signature {signature}) already belongs to rule {owner['rule_id']}"
                )
            db.execute(
                "UPDATE rules SET source='curated', triton_min=COALESCE(triton_min, ?), "
                "triton_max=COALESCE(triton_max, ?) WHERE id=?",
                (triton, triton, rule_id),
            )
            counted = db.execute(
                "SELECT 1 FROM failures WHERE rule_id=? AND task_id=? AND signature=? AND code=? LIMIT 1",
                (rule_id, task_id, signature, code),
            ).fetchone()
            if counted is None:
                self._add_failure(
                    db,
                    rule_id,
                    specific=True,
                    row=(task_id, signature, signature_key, status, error_type, error_text, code, triton, backend),
                )
        return self.rule(rule_id)

    def _add_failure(
        self,
        db: Database,
        rule_id: int | None,
        *,
        specific: bool,
        row: tuple[str, str, str, str, str, str, str, str | None, str | None],
        node_id: int | None = None,
    ) -> int:
        """Insert a failure (task, signature, key, status, error type, error text, code, triton, backend) and
        count it toward `rule_id`, whose signatures it joins when specific. Returns the failure's id."""
        task_id, signature, signature_key, status, error_type, error_text, code, triton, backend = row
        failure_id = db.insert(
            "INSERT INTO failures (task_id, signature, signature_key, status, error_type, error_text, code, "
            "rule_id, triton, backend, created_at, node_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                task_id,
                signature,
                signature_key,
                status,
                error_type,
                error_text,
                code,
                rule_id,
                triton,
                backend,
                _now(),
                node_id,
            ),
        )
        if rule_id is not None:
            self._count_toward(
                db,
                rule_id,
                specific=specific,
                signature=signature,
                key=signature_key,
                task_id=task_id,
                triton=triton,
                backend=backend,
            )
        return failure_id

    def _count_toward(
        self,
        db: Database,
        rule_id: int,
        *,
        specific: bool,
        signature: str,
        key: str,
        task_id: str,
        triton: str | None,
        backend: str | None,
    ) -> None:
        self._count(db, rule_id, task_id, triton, backend)
        if specific:
            db.execute("INSERT INTO rule_signatures VALUES (?, ?, ?) ON CONFLICT DO NOTHING", (signature, rule_id, key))

    def _count(self, db: Database, rule_id: int, task_id: str, triton: str | None, backend: str | None) -> None:
        row = db.execute("SELECT triton_min, triton_max, backends, source FROM rules WHERE id=?", (rule_id,)).fetchone()
        db.execute("INSERT INTO rule_tasks VALUES (?, ?) ON CONFLICT DO NOTHING", (rule_id, task_id))
        low, high = row["triton_min"], row["triton_max"]
        # A distilled rule's scope is the range of Triton versions it was seen in; an imported rule keeps an
        # unknown scope until its reproducer confirms it.
        if triton is not None and row["source"] != "imported":
            low = triton if low is None or version_key(triton) < version_key(low) else low
            high = triton if high is None or version_key(triton) > version_key(high) else high
        backends = set(json.loads(row["backends"])) | ({backend} if backend else set())
        now = _now()
        db.execute(
            "UPDATE rules SET occurrences=occurrences+1, tasks=(SELECT COUNT(*) FROM rule_tasks WHERE rule_id=?), "
            "triton_min=?, triton_max=?, backends=?, first_seen=COALESCE(first_seen, ?), last_seen=? WHERE id=?",
            (rule_id, low, high, json.dumps(sorted(backends)), now, now, rule_id),
        )
        self._bump(db)  # the counts decide what is injected: a cached skill memory is stale now

    def set_rule_status(self, rule_id: int, status: str) -> RuleRecord:
        self.rule(rule_id)
        with self._write() as db:
            db.execute("UPDATE rules SET status=? WHERE id=?", (status, rule_id))
            self._bump(db)  # the words are the same; the index stays current
        return self.rule(rule_id)

    def set_rule_text(self, rule_id: int, text: str, words: set[str]) -> RuleRecord:
        """Raises:
        NotFoundError: the rule id is unknown.
        RequestError: another rule has this text already (the request's fault, not a race).
        """
        self.rule(rule_id)
        twin = self.rule_with_text(text)
        if twin is not None and twin.id != rule_id:
            raise RequestError(
                f"rule {twin.id} has this text already; retire one of the two rules rather than giving them one "
                "sentence"
            )
        with self._write() as db:
            db.execute("UPDATE rules SET text=?, token_count=? WHERE id=?", (text, len(words), rule_id))
            db.execute("DELETE FROM rule_tokens WHERE rule_id=?", (rule_id,))
            db.executemany("INSERT INTO rule_tokens VALUES (?, ?)", [(t, rule_id) for t in sorted(words)])
            self._bump(db)
            self._index_cache = None
        return self.rule(rule_id)

    def add_rules(self, rules: list[NewRule], merge: Sequence[tuple[int, NewRule]] = ()) -> list[int]:
        """Insert rules, and merge evidence into existing ones, all together or not at all.

        `merge` pairs an existing rule with a rule of the same sentence from elsewhere (an export): the
        rule's occurrences rise to the other's if that is higher (so importing one file twice counts it
        once), its tasks and signatures are joined (a signature another rule owns stays with that rule),
        and a retired other retires an active rule. Returns the new rules' ids."""
        with self._write() as db:
            for rule_id, other in merge:
                now = _now()
                db.execute(
                    "UPDATE rules SET occurrences=CASE WHEN occurrences >= ? THEN occurrences ELSE ? END, "
                    "first_seen=COALESCE(first_seen, ?), "
                    "last_seen=COALESCE(last_seen, ?) WHERE id=?",
                    (
                        other.occurrences,
                        other.occurrences,
                        now if other.occurrences else None,
                        now if other.occurrences else None,
                        rule_id,
                    ),
                )
                if other.status == "retired":
                    db.execute("UPDATE rules SET status='retired' WHERE id=? AND status='active'", (rule_id,))
                db.executemany(
                    "INSERT INTO rule_tasks VALUES (?, ?) ON CONFLICT DO NOTHING",
                    [(rule_id, t) for t in other.task_ids],
                )
                db.execute(
                    "UPDATE rules SET tasks=(SELECT COUNT(*) FROM rule_tasks WHERE rule_id=?) WHERE id=?",
                    (rule_id, rule_id),
                )
                db.executemany(
                    "INSERT INTO rule_signatures VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                    [(signature, rule_id, key) for signature, key in other.signatures],
                )
            if merge:
                self._bump(db)  # counts and statuses changed; the words did not
            return [self._insert_rule(db, rule) for rule in rules]
