"""The skill memory: failure signatures, rule texts, merging, and the starter memory (pure Python)."""

from adaexplore.memory._judge import RuleCandidate, RuleJudge
from adaexplore.memory._signature import Signature, signature, signature_of_text
from adaexplore.memory._starter import STARTER_DIR, StarterRule, load_starter, read_header
from adaexplore.memory._text import (
    NO_GUIDANCE,
    check_rule_text,
    constructs,
    jaccard,
    more_specific,
    names_triton_mistake,
    tokens,
)

__all__ = [
    "NO_GUIDANCE",
    "STARTER_DIR",
    "RuleCandidate",
    "RuleJudge",
    "Signature",
    "StarterRule",
    "check_rule_text",
    "constructs",
    "jaccard",
    "load_starter",
    "more_specific",
    "names_triton_mistake",
    "read_header",
    "signature",
    "signature_of_text",
    "tokens",
]
