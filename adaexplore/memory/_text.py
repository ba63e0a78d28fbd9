"""Rule texts: what makes a valid rule, how alike two rules read, what code a rule names, and whether it names a
Triton mistake at all."""

from __future__ import annotations

import re

__all__ = ["NO_GUIDANCE", "check_rule_text", "constructs", "jaccard", "more_specific", "names_triton_mistake", "tokens"]

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


# The code a sentence names: a span in backticks, a dotted name (tl.range, triton.cdiv), a name with an underscore
# (num_stages, BLOCK_K), a name called or given a value (range(, flatten=), a decorator (@triton.jit).
_CODE = re.compile(r"`([^`]+)`|@?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)|\b([A-Za-z]\w*_\w+)|\b([A-Za-z_]\w*)(?=[(=])")
_NOT_CODE = frozenset({"e.g", "i.e", "etc"})


def constructs(text: str) -> set[str]:
    """The code a rule names, lowercased: spans in backticks, dotted names, names with an underscore, and names
    called or given a value (`tl.range(flatten=True)` names tl.range and flatten)."""
    found = set()
    for match in _CODE.finditer(text):
        name = next(group for group in match.groups() if group is not None).strip().lower()
        if name and name not in _NOT_CODE:
            found.add(name)
    return found


def more_specific(text: str, than: str) -> bool:
    """Whether rule `text` names code that rule `than` does not mention: then it says more about the mistake than
    `than` does (which construct, which argument), and is kept as its own rule rather than dropped."""
    general = than.lower()
    return any(name not in general for name in constructs(text))


# What a kernel does that makes it hang or run past its time: its loops, waits on other programs, locks and
# atomics, its launch grid and its tiles, and the triton.language calls and launch options themselves.
_TRITON_WORDS = frozenset(
    "loop loops while range break continue iteration iterations trip atomic atomics atomic_add atomic_cas "
    "atomic_xchg spin spins spinning lock locks barrier barriers deadlock deadlocks program programs program_id "
    "num_programs grid mask masks masked pointer pointers stride strides offset offsets block blocks tile tiles "
    "constexpr num_warps num_stages autotune warp warps reduction store load dot".split()
)
_TRITON_NAME = re.compile(r"@triton\.jit|\b(?:tl|triton|libdevice)\.\w+", re.I)


def names_triton_mistake(text: str) -> bool:
    """Whether a rule names something a Triton kernel does (a triton.language call, a loop, a wait on another
    program, an atomic, the grid, a tile). A rule given for a timeout is kept only then: a sentence about the
    time budget alone ("You cannot run past the time limit") is not a rule about writing Triton."""
    return bool(_TRITON_NAME.search(text)) or bool(tokens(text) & _TRITON_WORDS)
