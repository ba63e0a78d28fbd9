"""Rule texts: what makes a valid rule, and how alike two rules read."""

from __future__ import annotations

import re

__all__ = ["NO_GUIDANCE", "check_rule_text", "jaccard", "tokens"]

NO_GUIDANCE = "no guidance"
_WORD = re.compile(r"[a-z_][a-z0-9_.]*")
_STOP = frozenset(
    "you cannot a an the of to in on and or for with as is are be it its by at from that this use instead "
    "when not do does into than then so any each every one two inside kernel kernels triton".split()
)
MAX_RULE_CHARS = 400


def tokens(text: str) -> set[str]:
    """The content words of a rule, lowercased (stop words and the rule's opening left out)."""
    return {w.strip(".") for w in _WORD.findall(text.lower()) if w.strip(".") not in _STOP and len(w) > 1}


def jaccard(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 0.0
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)


def check_rule_text(text: str) -> str | None:
    """The rule text cleaned up, None for "no guidance"; raises ValueError saying what is wrong."""
    cleaned = " ".join(text.split())
    if any(not ch.isprintable() for ch in cleaned):
        raise ValueError("a rule is plain text: it has a control character (such as NUL); send the sentence alone")
    if cleaned.lower().rstrip(".") == NO_GUIDANCE:
        return None
    if not cleaned.startswith("You cannot "):
        raise ValueError(
            f"a rule is one sentence that starts with 'You cannot …' (or the words '{NO_GUIDANCE}'); "
            f"got {cleaned[:80]!r}"
        )
    if len(cleaned) > MAX_RULE_CHARS:
        raise ValueError(f"a rule is one sentence of at most {MAX_RULE_CHARS} characters; this one has {len(cleaned)}")
    return cleaned
