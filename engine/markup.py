"""The grammar of a tag, as possessive regular expressions (linear on any input, no backtracking), and the reading
of its parts: names, attributes, entities. The scanner (engine/tags.py) and the prose renderer (engine/prose.py)
share it; `escape` makes any text safe to place in a prompt."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Collection

# Formatting a model may write out of habit: prose, never an attempt at a tool.
PROSE_TAGS = frozenset("a b i u s em strong small sup sub code pre p br hr span div blockquote aside q cite mark del ins "
                       "ul ol li h1 h2 h3 h4 h5 h6 center font".split())
NAME = r"[A-Za-z][A-Za-z0-9_]*+"
ATTR_NAME = r"[A-Za-z_][\w-]*+"
ATTR = rf"""\s++{ATTR_NAME}\s*+=\s*+(?:"[^"]*+"|'[^']*+')"""


def _tag_grammar(capture: bool) -> str:
    """A whole tag after its '<': a closer (group 1), or an open or self-closing tag (name 2, attributes 3, slash 4)."""
    group = (lambda p: f"({p})") if capture else (lambda p: f"(?:{p})")
    return rf"(?:/{group(NAME)}\s*+|{group(NAME)}{group(f'(?:{ATTR})*+')}\s*+{group('/?')})>"


_TAG_BODY = _tag_grammar(capture=True)
_TAG_SHAPE = _tag_grammar(capture=False)
# Exactly the texts that are not a tag yet but may become one with more text: the prefixes of the grammar above.
_PARTIAL_AT_END = (rf"""(?:/(?:{NAME}\s*+)?|{NAME}(?:{ATTR})*+"""
                   rf"""(?:\s++(?:{ATTR_NAME}(?:\s*+(?:=\s*+(?:"[^"]*+|'[^']*+)?)?)?)?|\s*+/)?)?\Z""")

PARTIAL = re.compile("<" + _PARTIAL_AT_END)
_ATTR_ONE = re.compile(rf"""\s+({ATTR_NAME})\s*=\s*(?:"([^"]*)"|'([^']*)')""")
NAME_AT = re.compile(NAME)
_ATTR_NAME_AT = re.compile(ATTR_NAME)
_SPACE_AT = re.compile(r"\s*+")
SPACES_ONLY = re.compile(r"\s*")
_ENTITIES = {"&lt;": "<", "&gt;": ">", "&quot;": '"', "&apos;": "'", "&amp;": "&"}
_ENTITY = re.compile("|".join(map(re.escape, _ENTITIES)))
OBSERVATION = "<observation"


def trie(words: Collection[str]) -> str:
    """An alternation of words as a prefix tree: the regex engine tries one branch per character, not one per word."""
    tree: dict = {}
    for word in words:
        node = tree
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def render(node: dict) -> str:
        branches = [re.escape(ch) + render(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body

    return render(tree) or "(?!)"


_PROSE_TRIE = trie(PROSE_TAGS)


@lru_cache(maxsize=8)
def master_pattern(tools: frozenset[str]) -> re.Pattern[str]:
    """Prose up to the next '<' that may matter (a tag, a tool's tag, an observation, a tag still arriving), or a tag."""
    candidate = rf"(?:{_TAG_SHAPE}|(?:{trie(tools)}|(?i:observation))(?=[\s/>]|\Z)|{_PARTIAL_AT_END})"
    prose = "|".join([
        r"[^<]++",
        r"<(?!/?[A-Za-z]|/?\Z)",  # '<' before neither a name nor the end, where a tag may still begin
        rf"</?{NAME}(?![\s/>]|\Z)",  # a name glued to what no tag name is followed by
        rf"</?(?i:{_PROSE_TRIE})(?![A-Za-z0-9_])(?:{ATTR})*+\s*+/?>",  # whole formatting tags: finalize renders them
        rf"<(?!{candidate})",
    ])
    # A structural tag is tried first (it is the expensive case for the prose loop to rule out).
    return re.compile(rf"<(?!/?(?i:{_PROSE_TRIE})(?![A-Za-z0-9_])){_TAG_BODY}|(?:{prose})++")


# What a tag's name makes it, decided once per name.
TOOL, OBSERVED, THINKING, UNKNOWN = range(4)


def classify(name: str, tools: frozenset[str]) -> int:
    if name in tools:
        return TOOL
    lowered = name.lower()
    if lowered == "observation":
        return OBSERVED
    # Hidden, never run: the model's private reasoning, and the debug-mode self-report (engine/feedback.py).
    return THINKING if lowered in ("thinking", "tool_feedback") else UNKNOWN


_SENTENCE_END = re.compile(r"\w[.!?…][\"'”’)\]*_]*(?:\s|\Z)")
_TWO_WORDS = re.compile(r"[^\W\d_]{2,}\s+[^\W\d_]{2,}")


def reads_as_prose(body: str) -> bool:
    """Whether the text after a tool tag that never closed is narration (words and a sentence end), not arguments."""
    return (not body.lstrip().startswith(("{", "<")) and _SENTENCE_END.search(body) is not None
            and _TWO_WORDS.search(body) is not None)


def lex_open(window: str) -> tuple[str, int]:
    """How far window (from '<' and a name) follows the open-tag grammar: ("partial", end), ("bad", where), ("whole", end)."""
    n = len(window)
    i = NAME_AT.match(window, 1).end()  # type: ignore[union-attr]  # the caller saw the name
    while True:
        j = _SPACE_AT.match(window, i).end()  # type: ignore[union-attr]
        if j == n:
            return "partial", n
        c = window[j]
        if c == ">":
            return "whole", j + 1
        if c == "/":
            if j + 1 == n:
                return "partial", n
            return ("whole", j + 2) if window[j + 1] == ">" else ("bad", j)
        if j == i:
            return "bad", j  # an attribute must follow whitespace
        a = _ATTR_NAME_AT.match(window, j)
        if a is None:
            return "bad", j
        k = _SPACE_AT.match(window, a.end()).end()  # type: ignore[union-attr]
        if k == n:
            return "partial", n
        if window[k] != "=":
            return "bad", k
        k = _SPACE_AT.match(window, k + 1).end()  # type: ignore[union-attr]
        if k == n:
            return "partial", n
        if window[k] not in "\"'":
            return "bad", k
        close = window.find(window[k], k + 1)
        if close < 0:
            return "partial", n
        i = close + 1


def attributes(raw: str) -> tuple[dict[str, str], str]:
    """A whole tag's attributes, unescaped, and the name of one given twice ('' if none)."""
    attrs: dict[str, str] = {}
    if not raw:
        return attrs, ""
    for m in _ATTR_ONE.finditer(raw):
        key = m.group(1)
        if key in attrs:
            return attrs, key
        attrs[key] = unescape(m.group(2) if m.group(2) is not None else m.group(3))
    return attrs, ""


def unescape(text: str) -> str:
    return _ENTITY.sub(lambda m: _ENTITIES[m.group(0)], text)


def escape(text: str) -> str:
    """Make text safe to place in a prompt: no tag in it can look like the engine's own."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
