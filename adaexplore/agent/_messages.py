"""The plain types of a model conversation: a message, a reply and its usage.

They live apart from the client so that what only reads or writes them (the offline generator, the loop)
does not import the OpenAI SDK.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypedDict

__all__ = ["Message", "Reply", "Usage"]


class Message(TypedDict):
    """One chat message, as the endpoint takes it."""

    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class Usage:
    """Tokens of one reply and their price (USD, from the configured prices per million tokens)."""

    input_tokens: int
    output_tokens: int
    cost_usd: float


@dataclass(frozen=True)
class Reply:
    """One reply: its text ("" when the endpoint sent no content), why it ended, and what it cost."""

    text: str
    finish_reason: str
    usage: Usage
    seconds: float
    attempts: int
    model: str

    @property
    def truncated(self) -> bool:
        """The reply was cut off at max_tokens."""
        return self.finish_reason == "length"
