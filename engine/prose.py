"""The prose players see, rendered from what the scanner kept: HTML-like formatting as markdown (or dropped while
it streams), no mass or role pings, no runs of spaces or blank lines."""

from __future__ import annotations

import re
from typing import Collection

from .markup import ATTR, PROSE_TAGS, trie

_MARKS = {"i": "*", "em": "*", "b": "**", "strong": "**", "u": "__", "s": "~~", "del": "~~", "code": "`"}
_BREAKS = {"br": "\n", "li": "\n- ", **{t: "\n\n" for t in "p div blockquote pre ul ol hr h1 h2 h3 h4 h5 h6".split()}}


_BLANK_LINES = re.compile(r"\n{3,}")
_SPACES = re.compile(r"[ \t]{2,}")
_TRAILING = re.compile(r"[ \t]+\n")
_MASS_MENTION = re.compile(r"@(everyone|here)", re.I)
_ROLE_MENTION = re.compile(r"<@&\d+>")


def _tag_pattern(names: Collection[str], tail: str = "") -> re.Pattern[str]:
    """Whole formatting tags of these names (any case), quote-aware like the scanner's; a cheap guard comes first."""
    return re.compile(rf"<(?=/?[A-Za-z])(/?)({trie(names)})(?![A-Za-z0-9_])(?:{ATTR})*+\s*+/?>{tail}", re.I)


_PROSE_TAG = _tag_pattern(PROSE_TAGS)
_BREAK_TAG = _tag_pattern(_BREAKS)
# A formatting pair with no tag inside it (the innermost first), so each pass is linear.
_PAIR = re.compile(rf"<(?=[A-Za-z])({trie(_MARKS)})(?![A-Za-z0-9_])(?:{ATTR})*+\s*+>([^<]*)</\1\s*>", re.I)


def _pair(m: re.Match[str]) -> str:
    mark = _MARKS[m.group(1).lower()]
    return f"{mark}{m.group(2)}{mark}" if m.group(2) else ""  # an empty pair shows nothing


def _break(m: re.Match[str]) -> str:
    """A block or line-break tag as the line breaks it stands for (a closing </li> as nothing)."""
    return "" if m.group(1) and m.group(2).lower() == "li" else _BREAKS[m.group(2).lower()]


def _formatting(text: str) -> str:
    """HTML formatting as Discord markdown: breaks, then pairs (innermost first), then any tag left is dropped."""
    if "<" not in text:
        return text
    text = _BREAK_TAG.sub(_break, text)
    for _ in range(3 if "</" in text else 0):  # nesting: each pass pairs the tags that have no tag left inside them
        text, paired = _PAIR.subn(_pair, text)
        if not paired:
            break
    return _PROSE_TAG.sub("", text)


def streaming(prose: str) -> str:
    """Prose as it streams: HTML-like formatting tags dropped rather than turned into markdown, since a pair's
    markdown is known only when it closes; so the text only ever grows. The committed reply is `finalize`d."""
    if "<" not in prose:
        return prose
    return _PROSE_TAG.sub("", _BREAK_TAG.sub(_break, prose))


def finalize(prose: str) -> str:
    """Rendered prose made safe and tidy: markdown for HTML, no mass or role pings, no runs of spaces or blank lines."""
    text = _MASS_MENTION.sub("@\u200b\\1", _formatting(prose))
    text = _ROLE_MENTION.sub("@role", text)
    text = _TRAILING.sub("\n", _SPACES.sub(" ", text.replace("\r\n", "\n")))
    return _BLANK_LINES.sub("\n\n", text).strip()
