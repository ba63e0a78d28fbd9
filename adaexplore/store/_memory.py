"""The skill memory's tables: rules, the signatures they cover, the tasks they were seen in, and failures."""

from __future__ import annotations

import contextlib
import functools
import heapq
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict

from adaexplore.errors import NotFoundError, RequestError
from adaexplore.store._db import Database, Row
from adaexplore.store._records import fits

__all__ = ["FailureRecord", "MemoryTables", "NewRule", "RuleRecord", "version_key"]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@functools.cache
def version_key(version: str) -> tuple[int, ...]:
    """'3.6.0' -> (3, 6, 0); anything after the numbers (a '+git…' suffix) is ignored."""
    parts = []
    for piece in version.split("+")[0].split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


class RuleRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: int
    text: str
    status: str
    source: str
    triton_min: str | None
    triton_max: str | None
    backends: list[str]
    occurrences: int
    tasks: int
    first_seen: str | None
    last_seen: str | None
    created_at: str
    signatures: list[str]

    @property
    def scope_known(self) -> bool:
        return self.triton_min is not None and self.triton_max is not None

    def holds_for(self, triton: str) -> bool:
        """True when the running Triton lies in the range this rule was seen (or verified) in."""
        if not self.scope_known:
            return False
        assert self.triton_min is not None and self.triton_max is not None
        return version_key(self.triton_min) <= version_key(triton) <= version_key(self.triton_max)


class FailureRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: int
    task_id: str
    signature: str
    signature_key: str
    status: str
    error_type: str
    error_text: str
    code: str
    rule_id: int | None
    triton: str | None
    backend: str | None
    created_at: str
    node_id: int | None = None  # the node it was recorded from, when it came from one


@dataclass
class NewRule:
    text: str
    tokens: set[str]
    source: str = "distilled"
    status: str = "active"
    triton_min: str | None = None
    triton_max: str | None = None
    backends: tuple[str, ...] = ()
    occurrences: int = 0
    task_ids: tuple[str, ...] = ()
    signatures: tuple[tuple[str, str], ...] = ()  # (id, key)


@dataclass
class _TokenIndex:
    version: int
    postings: dict[str, set[int]] = field(default_factory=dict)
    words: dict[int, set[str]] = field(default_factory=dict)


class MemoryTables:
    """Mixed into the store: it shares the store's connection and its one-writer transactions."""

    _db: Database
    _index_cache: _TokenIndex | None = None
    _write: Callable[[], contextlib.AbstractContextManager[Database]]  # the store's transaction

    # reading -------------------------------------------------------------------------------------
    def _rule_from(self, row: Row) -> RuleRecord:
        signatures = [
            r[0]
            for r in self._db.execute(
                "SELECT signature FROM rule_signatures WHERE rule_id=? ORDER BY signature", (row["id"],)
            )
        ]
        data = {k: row[k] for k in row.keys() if k != "token_count"}
        data["backends"] = json.loads(row["backends"])
        return RuleRecord(**data, signatures=signatures)

    def rule(self, rule_id: int) -> RuleRecord:
        row = self._db.execute("SELECT * FROM rules WHERE id=?", (rule_id,)).fetchone() if fits(rule_id) else None
        if row is None:
            raise NotFoundError(
                f"no rule has id {rule_id} (get_skill_memory with format data lists the rules, and so does "
                "`adaexplore memory list`)",
                cli=f"no rule has id {rule_id}; `adaexplore memory list --all` lists the rules",
            )
        return self._rule_from(row)

    def rules(self, statuses: tuple[str, ...] = ("active", "pinned", "retired")) -> list[RuleRecord]:
        marks = ",".join("?" * len(statuses))
        rows = self._db.execute(
            f"SELECT * FROM rules WHERE status IN ({marks}) ORDER BY occurrences DESC, id", statuses
        )
        return [self._rule_from(r) for r in rows]

    def rule_count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM rules").fetchone()[0])

    def rule_for_signature(self, signature: str) -> RuleRecord | None:
        """The rule that covers `signature`, whatever its status: a retired rule still owns its mistake (it is
        counted, never injected), so the same failure does not start a second rule."""
        row = self._db.execute(
            "SELECT r.* FROM rules r JOIN rule_signatures s ON s.rule_id = r.id WHERE s.signature=?",
            (signature,),
        ).fetchone()
        return self._rule_from(row) if row else None

    def similar_rules(self, words: set[str], limit: int = 10, floor: float = 0.3) -> list[tuple[int, str, float]]:
        """(rule id, text, Jaccard similarity) of the rules most like `words`, down to `floor`; retired rules
        too, so that a retired rule's sentence counts toward it instead of making it again.

        A rule at Jaccard >= floor shares at least ceil(floor * |words|) words, so it contains one of the
        |words| - that + 1 rarest words: only those words' rules are compared.
        """
        if not words:
            return []
        index = self._token_index()
        needed = max(1, math.ceil(floor * len(words) - 1e-9))
        rarest = sorted(words, key=lambda w: (len(index.postings.get(w, ())), w))[: len(words) - needed + 1]
        candidates = set().union(*(index.postings.get(w, set()) for w in rarest))
        scored = []
        for rule in candidates:
            shared = len(words & index.words[rule])
            similarity = shared / (len(words) + len(index.words[rule]) - shared)
            if similarity >= floor:
                scored.append((similarity, rule))
        best = heapq.nlargest(limit, scored, key=lambda s: (s[0], -s[1]))
        if not best:
            return []
        marks = ",".join("?" * len(best))
        texts = dict(self._db.execute(f"SELECT id, text FROM rules WHERE id IN ({marks})", [r for _, r in best]))
        return [(rule, texts[rule], similarity) for similarity, rule in best]

    def rules_to_inject(self, *, min_occurrences: int, min_tasks: int) -> Iterator[RuleRecord]:
        """Live rules that pass the counts (pinned and curated ones whatever their counts), pinned first, then
        the most frequent; read lazily in index order, so a caller that stops early reads little. Their
        signatures are not read."""
        queries = [
            ("SELECT * FROM rules WHERE status='pinned' ORDER BY occurrences DESC, id", ()),
            (
                "SELECT * FROM rules WHERE status='active' AND (source='curated' OR (occurrences >= ? AND tasks >= ?)) "
                "ORDER BY occurrences DESC, id",
                (min_occurrences, min_tasks),
            ),
        ]
        for sql, parameters in queries:
            for row in self._db.execute(sql, parameters):
                data = {k: row[k] for k in row.keys() if k != "token_count"}
                data["backends"] = json.loads(row["backends"])
                yield RuleRecord(**data, signatures=[])

    # the token index -------------------------------------------------------------------------------
    def _token_index(self) -> _TokenIndex:
        """Rule words held in memory; rebuilt when another connection changed the rules (their version in
        `meta` moved), kept up to date by this connection's own writes."""
        version = self._rules_version(self._db)
        cached = getattr(self, "_index_cache", None)
        if cached is not None and cached.version == version:
            return cached
        index = _TokenIndex(version=version)
        for rule, word in self._db.execute("SELECT rule_id, token FROM rule_tokens"):
            index.postings.setdefault(word, set()).add(rule)
            index.words.setdefault(rule, set()).add(word)
        self._index_cache = index
        return index

    def rules_version(self) -> int:
        """A number that moves whenever any rule changes (text, status, counts, scope, or a new rule), from any
        connection."""
        return self._rules_version(self._db)

    @staticmethod
    def _rules_version(db: Database) -> int:
        row = db.execute("SELECT value FROM meta WHERE key='rules_version'").fetchone()
        return int(row[0]) if row else 0

    def _bump(self, db: Database) -> _TokenIndex | None:
        """Advance the rules' version inside a write; the cached index, if it was current, to update too."""
        version = self._rules_version(db)
        db.execute(
            "INSERT INTO meta VALUES ('rules_version', ?) ON CONFLICT (key) DO UPDATE SET value=excluded.value",
            (str(version + 1),),
        )
        cached = getattr(self, "_index_cache", None)
        if cached is None or cached.version != version:
            self._index_cache = None
            return None
        cached.version = version + 1
        return cached

    def rule_task_ids(self, rule_id: int) -> list[str]:
        return [
            r[0]
            for r in self._db.execute("SELECT task_id FROM rule_tasks WHERE rule_id=? ORDER BY task_id", (rule_id,))
        ]

    def rule_signature_keys(self, rule_id: int) -> list[tuple[str, str]]:
        return [
            (r[0], r[1])
            for r in self._db.execute(
                "SELECT signature, key FROM rule_signatures WHERE rule_id=? ORDER BY signature", (rule_id,)
            )
        ]

    def failures(self, rule_id: int | None = None, limit: int = 50) -> list[FailureRecord]:
        if rule_id is None:
            rows = self._db.execute("SELECT * FROM failures ORDER BY id DESC LIMIT ?", (limit,))
        else:
            rows = self._db.execute("SELECT * FROM failures WHERE rule_id=? ORDER BY id DESC LIMIT ?", (rule_id, limit))
        return [FailureRecord(**dict(r)) for r in rows]

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
    ) -> tuple[int, int | None]:
        """Store a failure and count it toward its rule (an existing one by id, or a new one), in one
        transaction. Returns (failure id, rule id).

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
                    specific=specific,
                    signature=signature,
                    key=signature_key,
                    task_id=task_id,
                    triton=triton,
                    backend=backend,
                )
                return earlier["id"], rule_id
            failure_id = self._add_failure(
                db,
                rule_id,
                specific=specific,
                row=(task_id, signature, signature_key, status, error_type, error_text, code, triton, backend),
                node_id=node_id,
            )
        return failure_id, rule_id

    def failure_of_node(self, node_id: int) -> FailureRecord | None:
        """The failure recorded from `node_id`, if one was."""
        row = (
            self._db.execute("SELECT * FROM failures WHERE node_id=?", (node_id,)).fetchone() if fits(node_id) else None
        )
        return FailureRecord(**dict(row)) if row is not None else None

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

    def rule_with_text(self, text: str) -> RuleRecord | None:
        """The rule whose sentence is exactly `text`, retired or not."""
        row = self._db.execute("SELECT id FROM rules WHERE text=? ORDER BY id LIMIT 1", (text,)).fetchone()
        return self.rule(row["id"]) if row is not None else None

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

    def add_rules(self, rules: list[NewRule], merge: list[tuple[int, NewRule]] = ()) -> list[int]:
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
