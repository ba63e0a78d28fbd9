"""Listings and names shortened for people: whatever is left out says so.

A list cut to its first few items ends with "and 3 more", never a bare "…" that hides how many; a name cut to a
column's width keeps an ellipsis where the cut is, so that a path is never mistaken for a shorter one.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["first_of", "shorten"]


def first_of(items: Sequence[str], limit: int, *, sep: str = ", ") -> str:
    """The first `limit` items joined by `sep`, then "and N more" for the rest."""
    shown = sep.join(items[:limit])
    left = len(items) - limit
    if left <= 0:
        return shown
    return f"{shown}{sep}and {left} more" if shown else f"{left} more"


def shorten(text: str, width: int, *, keep: str = "start") -> str:
    """`text` in at most `width` characters: cut with an ellipsis, keeping its start (a name) or its end (a path,
    whose last parts tell it apart)."""
    if len(text) <= width:
        return text
    if keep == "end":
        return "…" + text[len(text) - width + 1 :]
    return text[: width - 1] + "…"
