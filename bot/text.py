"""Text for Discord: replies split to fit its 2,000-character messages."""

from __future__ import annotations

import re

LIMIT = 2000
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+")


def split_message(text: str, limit: int = LIMIT) -> list[str]:
    """Pieces of at most `limit` characters, cut at paragraphs, then sentences, then spaces, then anywhere."""
    text = text.strip()
    pieces: list[str] = []
    while len(text) > limit:
        window = text[: limit + 1]
        cut = window.rfind("\n\n")
        if cut < limit // 3:
            ends = [m.end() for m in _SENTENCE_END.finditer(window) if m.end() <= limit]
            cut = ends[-1] if ends and ends[-1] >= limit // 3 else window.rfind(" ")
        if cut < limit // 3:
            cut = limit
        pieces.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    if text:
        pieces.append(text)
    return pieces
