"""Find tool tags in a model's output as it streams in, and clean replies for players."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Collection, Literal

MAX_OPEN_TAG = 400  # characters from '<' to '>' before an open tag is judged malformed
MAX_BODY = 4000  # characters of body before a tool tag is judged unclosed

_NAME = re.compile(r"<([A-Za-z][A-Za-z0-9_]*)")
_ATTR = re.compile(r"""\s+([A-Za-z_][\w-]*)\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_OPEN_END = re.compile(r"\s*(/?)>")
_ENTITIES = {"&lt;": "<", "&gt;": ">", "&quot;": '"', "&apos;": "'", "&amp;": "&"}
_ENTITY = re.compile("|".join(map(re.escape, _ENTITIES)))

Kind = Literal["call", "malformed", "unclosed", "observation"]

# Formatting a model may write out of habit: prose, never an attempt at a tool.
PROSE_TAGS = frozenset("a b i u s em strong small sup sub code pre p br hr span div blockquote aside q cite mark del ins "
                       "ul ol li h1 h2 h3 h4 h5 h6 center font".split())


@dataclass
class TagEvent:
    """A tag found in the stream: a complete call, a broken one, or a fabricated observation."""

    kind: Kind
    name: str
    start: int
    end: int
    attrs: dict[str, str] = field(default_factory=dict)
    body: str = ""
    error: str = ""


class TagScanner:
    """Feed it chunks; it returns the first tag event as soon as the buffer proves one."""

    def __init__(self, tool_names: Collection[str]) -> None:
        self.tools = frozenset(tool_names)
        self.buf = ""
        self._pos = 0

    def feed(self, chunk: str) -> TagEvent | None:
        self.buf += chunk
        return self._scan(final=False)

    def resume(self, pos: int) -> None:
        """Scan on from pos, past an event the caller has dealt with."""
        self._pos = pos

    def finish(self) -> TagEvent | None:
        """The stream ended: a tag still open now is unclosed."""
        return self._scan(final=True)

    def _scan(self, final: bool) -> TagEvent | None:
        buf = self.buf
        while True:
            i = buf.find("<", self._pos)
            if i < 0:
                self._pos = len(buf)
                return None
            outcome = self._at(i, final)
            if outcome == "wait":
                self._pos = i
                return None
            if outcome == "text":
                self._pos = i + 1
                continue
            return outcome

    def _at(self, i: int, final: bool) -> TagEvent | Literal["wait", "text"]:
        buf = self.buf
        rest = buf[i:]
        if "<observation".startswith(rest[:12]) and len(rest) < 13 and not final:
            return "wait"
        if rest.startswith("<observation") and (len(rest) == 12 or rest[12] in " >/\n"):
            return TagEvent("observation", "observation", i, len(buf))
        m = _NAME.match(buf, i)
        if m is None:
            return "text"
        name = m.group(1)
        if m.end() == len(buf) and not final:
            return "wait"  # the name may go on in the next chunk
        if name == "thinking" or name.lower() in PROSE_TAGS:
            return "text"
        known = name in self.tools
        attrs, open_end, self_closing, problem = _parse_open_tag(buf, m.end())
        if problem == "incomplete":
            if final or open_end - i > MAX_OPEN_TAG:
                if known:
                    return TagEvent("unclosed" if final else "malformed", name, i, len(buf) if final else open_end,
                                    error=f"the <{name}> tag was never finished with '>'")
                return "text"
            return "wait"
        if problem:
            if known:
                return TagEvent("malformed", name, i, open_end, error=problem)
            return "text"
        if self_closing:
            return TagEvent("call", name, i, open_end, attrs=attrs)
        close = f"</{name}>"
        j = buf.find(close, open_end)
        if j >= 0 and not known and self._known_tag_after(open_end, j):
            return "text"  # an unknown wrapper yields to the tool tag inside it, however the stream was chunked
        if j >= 0:
            return TagEvent("call", name, i, j + len(close), attrs=attrs, body=buf[open_end:j])
        if not known:
            # An unknown element counts as a tool attempt only once it is closed; until then it may be prose.
            if final or self._known_tag_after(open_end):
                return "text"
            return "wait"
        if final or len(buf) - open_end > MAX_BODY:
            return TagEvent("unclosed", name, i, len(buf), attrs=attrs, error=f"the <{name}> tag was never closed with {close}")
        return "wait"

    def _known_tag_after(self, start: int, end: int | None = None) -> bool:
        return any(m.group(1) in self.tools for m in _NAME.finditer(self.buf, start, len(self.buf) if end is None else end))


def _parse_open_tag(buf: str, pos: int) -> tuple[dict[str, str], int, bool, str]:
    """Attributes of an open tag whose name ends at pos: (attrs, end, self-closing, problem)."""
    attrs: dict[str, str] = {}
    while True:
        m = _ATTR.match(buf, pos)
        if m is None:
            break
        key = m.group(1)
        if key in attrs:
            return attrs, m.end(), False, f"the attribute '{key}' is given twice"
        attrs[key] = unescape(m.group(2) if m.group(2) is not None else m.group(3))
        pos = m.end()
    end = _OPEN_END.match(buf, pos)
    if end is not None:
        return attrs, end.end(), end.group(1) == "/", ""
    # Neither an attribute nor the tag's end: either more is coming, or the syntax is broken.
    gt = buf.find(">", pos)
    if gt < 0:
        return attrs, len(buf), False, "incomplete"
    snippet = buf[pos:gt].strip()[:60]
    return attrs, gt + 1, False, (
        f"cannot read the attributes '{snippet}': write them as name=\"value\" with quotes"
    )


def unescape(text: str) -> str:
    return _ENTITY.sub(lambda m: _ENTITIES[m.group(0)], text)


def escape(text: str) -> str:
    """Make text safe to place in a prompt: no tag in it can look like the engine's own."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_THINKING = re.compile(r"<thinking\b[^>]*>.*?(?:</thinking>|\Z)", re.S | re.I)
_OBSERVATION = re.compile(r"<observation\b[^>]*>.*?(?:</observation>|\Z)", re.S | re.I)
_STRAY_CLOSERS = re.compile(r"</(?:thinking|observation)>", re.I)
_BLANK_LINES = re.compile(r"\n{3,}")
_SPACES = re.compile(r"[ \t]{2,}")
_MASS_MENTION = re.compile(r"@(everyone|here)", re.I)
_ROLE_MENTION = re.compile(r"<@&\d+>")


_ITALIC = re.compile(r"<(i|em)>(.*?)</\1>", re.S | re.I)
_BOLD = re.compile(r"<(b|strong)>(.*?)</\1>", re.S | re.I)
_BREAK = re.compile(r"<br\s*/?>", re.I)
_FORMATTING = re.compile(r"</?(?:" + "|".join(sorted(PROSE_TAGS, key=len, reverse=True)) + r")\b[^<>]*>", re.I)


def visible_text(prose: str) -> str:
    """What players see of an agent's prose: no thinking, no observations, no mass or role pings, markdown not HTML."""
    text = _THINKING.sub("", prose)
    text = _OBSERVATION.sub("", text)
    text = _STRAY_CLOSERS.sub("", text)
    text = _BOLD.sub(r"**\2**", _ITALIC.sub(r"*\2*", text))
    text = _FORMATTING.sub("", _BREAK.sub("\n", text))
    text = _MASS_MENTION.sub(lambda m: "@\u200b" + m.group(1), text)
    text = _ROLE_MENTION.sub("@role", text)
    text = _SPACES.sub(" ", text)
    text = "\n".join(line.rstrip() for line in text.splitlines())
    return _BLANK_LINES.sub("\n\n", text).strip()
