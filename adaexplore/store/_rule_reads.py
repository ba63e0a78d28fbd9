"""The skill memory's records, and reading its tables: rules, the signatures they cover, the tasks they were
seen in, and failures; the rules' word index, which the writes keep current."""

from __future__ import annotations

import functools
import heapq
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from adaexplore.errors import NotFoundError
from adaexplore.store._db import Database, Row
from adaexplore.store._records import fits

__all__ = ["FailureRecord", "NewRule", "RuleReads", "RuleRecord", "version_key"]


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


class RuleReads:
    """The reading half of the store's memory tables (MemoryTables adds the writes)."""

    _db: Database
    _index_cache: _TokenIndex | None = None

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

    def rules_refining(self, signature: str, owner: int) -> list[RuleRecord]:
        """The rules that failures of `signature` count toward besides `owner`, the rule the signature belongs
        to: the more specific sentences kept for its mistake, oldest first."""
        rows = self._db.execute(
            "SELECT DISTINCT rule_id FROM failures WHERE signature=? AND rule_id IS NOT NULL AND rule_id<>? "
            "ORDER BY rule_id",
            (signature, owner),
        )
        return [self.rule(r[0]) for r in rows.fetchall()]

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

    def failure_of_node(self, node_id: int) -> FailureRecord | None:
        """The failure recorded from `node_id`, if one was."""
        row = (
            self._db.execute("SELECT * FROM failures WHERE node_id=?", (node_id,)).fetchone() if fits(node_id) else None
        )
        return FailureRecord(**dict(row)) if row is not None else None

    def rule_with_text(self, text: str) -> RuleRecord | None:
        """The rule whose sentence is exactly `text`, retired or not."""
        row = self._db.execute("SELECT id FROM rules WHERE text=? ORDER BY id LIMIT 1", (text,)).fetchone()
        return self.rule(row["id"]) if row is not None else None
