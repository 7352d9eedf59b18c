"""One tokenizer for the model's output: tool tags found as the stream arrives, and the prose players see.

The scanner reads a growing buffer with a few possessive regular expressions (linear, no backtracking) and a
state machine. A decision about a `<` is made only when the text seen so far proves it, so any chunking of a
stream gives the same events and the same prose. The prose is rendered from the same tokens in the same pass:
tool elements, thinking, observations, unknown tags and stray closers are dropped, formatting becomes markdown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Collection, Literal

from .markup import (NAME_AT, OBSERVATION, OBSERVED, PARTIAL, SPACES_ONLY, THINKING, TOOL, attributes, classify,
                     lex_open, master_pattern, reads_as_prose)
from .prose import finalize

MAX_OPEN_TAG = 400  # characters from '<' to '>' before an open tag is judged malformed (or, unknown, prose)
MAX_BODY = 16000  # characters of body before a tool tag is judged unclosed (a fight of 12 foes with stat blocks
# is ~10,000 characters of JSON)
MAX_WRAPPER = 400  # an unknown element closed within this many characters is a tool attempt; longer, it wraps prose
_DEFER = 128  # characters of text read at once while a tag is still arriving, rather than at every chunk
MAX_PENDING = 8  # unknown elements open at once that may still turn out to be tool attempts

Kind = Literal["call", "malformed", "unclosed", "observation"]


@dataclass(slots=True)
class TagEvent:
    """A tag found in the stream: a complete call, a broken one, or a fabricated observation."""

    kind: Kind
    name: str
    start: int
    end: int
    attrs: dict[str, str] = field(default_factory=dict)
    body: str = ""
    error: str = ""


@dataclass(slots=True)
class _Open:
    """An element whose end is not seen yet: a tool's body, or an unknown element that may be a tool attempt."""

    name: str
    start: int
    open_end: int
    attrs: dict[str, str]
    mark: int  # len(out) when it opened: its rendered body starts there
    malformed: bool = False  # a tool tag already reported as malformed: its body is hidden, with no second event
    thinking: bool = False  # the thinking state when it opened, restored if its body is dropped


class TagScanner:
    """Feed it chunks; it returns each tag event as soon as the buffer proves one, and renders the prose between.

    After returning an event it pauses there: `prose()` is then what players would see of the text before it.
    `resume()` goes on past it (the events after it come from the next `feed`, `advance` or `finish`).
    """

    def __init__(self, tool_names: Collection[str], *, hide_observations: bool = False, calls: bool = True) -> None:
        self.tools = frozenset(tool_names)
        self._master = master_pattern(self.tools)
        self._kinds: dict[str, int] = {}
        self._chunks: list[str] = []
        self._joined = 0  # how many chunks `buf` last joined
        self._buf = ""
        # The part of the text still needed (from the oldest open element, or the next unread character) and
        # where it starts: a long stream is not copied whole at every chunk.
        self._work = ""
        self._base = 0
        self._pos = 0  # the next character to read, counted from the start of the stream
        self._final = False
        self._paused = False
        self._hide_observations = hide_observations  # after an observation event: hide its block, then go on
        self._body: _Open | None = None
        self._pending: list[_Open] = []
        self._thinking = False
        self._in_observation = False
        self._out: list[str] = []
        self._collect: list[TagEvent] | None = None  # when reading on past events: where they go
        self._silent = not calls  # only the prose (and invented observations) wanted: calls are not built
        self._waiting = False  # the last read stopped at a tag still arriving

    # -- the public surface ---------------------------------------------------------------------------------------

    @property
    def buf(self) -> str:
        """Everything fed so far."""
        if self._joined != len(self._chunks):
            self._buf = "".join(self._chunks)
            self._chunks = [self._buf]
            self._joined = 1
        return self._buf

    def feed(self, chunk: str) -> TagEvent | None:
        if not chunk:
            return self.advance()
        self._chunks.append(chunk)
        if ("<" not in chunk and self._pos == self._base + len(self._work) and self._body is None and not self._paused
                and not (self._pending or self._thinking or self._in_observation)):
            self._out.append(chunk)  # plain prose after everything read: nothing to decide
            self._pos += len(chunk)
            self._base, self._work = self._pos, ""
            return None
        if (self._waiting and ">" not in chunk and not self._paused
                and self._base + len(self._work) - self._pos < _DEFER):
            # Waiting for a tag to finish, and no '>' came: nothing is decided until one does, or until enough text
            # piles up to settle it otherwise (too long, prose, an invented observation). Read it then, once.
            self._work += chunk
            return None
        keep = self._pos
        if self._body is not None:
            keep = min(keep, self._body.open_end)
        if self._pending:
            keep = min(keep, self._pending[0].open_end)
        if keep > self._base:
            self._work = self._work[keep - self._base:] + chunk
            self._base = keep
        else:
            self._work += chunk
        return self.advance()

    def finish(self) -> TagEvent | None:
        """The stream ended: a tag still open now is unclosed."""
        self._final = True
        return self.advance()

    def resume(self, pos: int | None = None) -> None:
        """Go on past the event the caller has dealt with."""
        self._paused = False

    def advance(self) -> TagEvent | None:
        """The next event in what the buffer holds, or None when more text is needed (or it is paused)."""
        if self._paused:
            return None
        event = self._run()
        if event is None and self._final:
            event = self._end_of_stream()
        if event is not None:
            self._paused = True
        return event

    def prose(self) -> str:
        """Players' view of the text so far (at a pause: of the text before the event), before final clean-up."""
        return "".join(self._out)

    def settled_prose(self) -> str:
        """The part of `prose()` that is certain: up to any element still open, whose body may yet be taken back
        (a tool's body is hidden when it closes). What a front end can show while the text streams."""
        marks = [o.mark for o in ([self._body] if self._body is not None else []) + self._pending[:1]]
        return "".join(self._out[:min(marks)] if marks else self._out)

    def events(self) -> list[TagEvent]:
        """Every event left in what the buffer holds (with finish(): to its end), going on past each."""
        self._paused = False
        found: list[TagEvent] = []
        self._collect = found
        try:
            while (event := self.advance()) is not None:
                found.append(event)
                self._paused = False
        finally:
            self._collect = None
        return found

    # -- the lexer ------------------------------------------------------------------------------------------------

    def _run(self) -> TagEvent | None:
        self._waiting = False
        work, base, out = self._work, self._base, self._out
        match, kinds = self._master.match, self._kinds
        n = len(work)
        pos = self._pos - base
        while pos < n:
            m = match(work, pos)
            if m is None:
                if (not self._final and n - pos <= MAX_OPEN_TAG and PARTIAL.match(work, pos) is not None
                        and work[pos:pos + len(OBSERVATION)].lower() != OBSERVATION):
                    self._waiting = True
                    return None  # a tag still arriving: wait for more text
                event = self._examine(pos + base)
                if event is _WAIT:
                    self._waiting = True
                    return None
            else:
                end = m.end()
                if m.lastindex is None:  # prose up to the next '<' that matters
                    if self._body is None and not (self._pending or self._thinking or self._in_observation):
                        out.append(work[pos:end])
                        pos = end
                        self._pos = end + base
                        continue
                    self._pos = end + base
                    event = self._on_text(pos + base, end + base)
                elif end - pos > MAX_OPEN_TAG:
                    event = self._examine(pos + base)
                else:
                    self._pos = end + base
                    closing = m.group(1)
                    name = closing or m.group(2)
                    kind = kinds.get(name)
                    if kind is None:
                        kind = kinds[name] = classify(name, self.tools)
                    event = self._on_tag(pos + base, end + base, closing, name, kind, m.group(3), bool(m.group(4)))
            if event is not None:
                if self._collect is None or event.kind == "observation" and not self._hide_observations:
                    return event
                self._collect.append(event)
            pos = self._pos - base
        return None

    def _examine(self, pos: int) -> TagEvent | None | object:
        """A '<' that is not a whole tag within bounds: still arriving, a broken tool tag, an observation, or prose."""
        final, base = self._final, self._base
        window = self._work[pos - base:pos - base + MAX_OPEN_TAG + 1]
        full = len(window) > MAX_OPEN_TAG
        closer = window.startswith("</")
        m = NAME_AT.match(window, 2 if closer else 1)
        if m is None:  # only '<' or '</' so far
            if len(window) == (2 if closer else 1):
                return self._cut_off(pos) if final else _WAIT
            return self._as_text(pos)
        name = m.group()
        if closer:  # a closer is a tag only when whole
            if SPACES_ONLY.fullmatch(window, m.end()) is not None and not full:
                return self._cut_off(pos) if final else _WAIT
            return self._as_text(pos)
        if name.lower() == "observation":
            if m.end() == len(window) and not final:
                return _WAIT  # '<observations' would be another word
            if m.end() == len(window):
                return self._cut_off(pos)
            self._pos = pos + len(OBSERVATION)
            return self._on_observation(pos)
        state, at = lex_open(window)
        if name not in self.tools:  # any other name is a tag only when whole; until then it may still become one
            if state == "partial" and not full:
                return self._cut_off(pos) if final else _WAIT
            return self._as_text(pos)
        gt = window.find(">", at) if state == "bad" else -1
        if gt >= 0:
            snippet = window[m.end():gt].strip()[:60]
            return self._malformed(pos, pos + gt + 1, name, window[gt - 1] == "/",
                                   f"cannot read the attributes '{snippet}': write them as name=\"value\" with quotes")
        if full:
            return self._malformed(pos, pos + MAX_OPEN_TAG, name, False,
                                   f"the <{name}> tag was never finished with '>' within {MAX_OPEN_TAG} characters")
        if not final:
            return _WAIT
        self._pos = end = base + len(self._work)
        self._abandon_body(pos)
        self._strip_pending()
        return TagEvent("unclosed", name, pos, end, error=f"the <{name}> tag was never finished with '>'")

    def _cut_off(self, pos: int) -> None:
        """The stream ended inside what may have become a tag: a fragment of markup, not shown."""
        self._pos = self._base + len(self._work)
        return None

    def _as_text(self, pos: int) -> TagEvent | None:
        self._pos = pos + 1
        return self._on_text(pos, pos + 1)

    def _text_at(self, start: int, end: int) -> str:
        return self._work[start - self._base:end - self._base]

    # -- the state machine ----------------------------------------------------------------------------------------

    def _on_text(self, start: int, end: int) -> TagEvent | None:
        body = self._body
        if body is not None:
            limit = body.open_end + MAX_BODY
            if end > limit:  # the body is too long to be arguments: cut it exactly there, whatever the chunking
                cut = max(start, limit)
                self._out.append(self._text_at(start, cut))
                self._pos = cut
                return self._overflow(cut)
            self._out.append(self._text_at(start, end))
            return None
        if self._pending:
            self._expire(end)
        if not (self._in_observation or self._thinking):
            self._out.append(self._text_at(start, end))
        return None

    def _on_tag(self, start: int, end: int, closing: str | None, name: str, kind: int, raw_attrs: str | None,
                selfclosing: bool) -> TagEvent | None:
        if kind == OBSERVED and not closing and not self._in_observation:
            self._pos = start + len(OBSERVATION)
            return self._on_observation(start)
        body = self._body
        if body is not None:
            if closing == body.name:
                return self._close_body(start, end)
            if kind == TOOL and not closing:
                self._abandon_body(start)  # another tool tag begins: the open one was prose, never a call
            elif end > body.open_end + MAX_BODY:
                self._pos = start  # read this tag again, outside the body
                return self._overflow(start)
            else:
                return None  # inside a tool's body, tags are not structure
        if self._in_observation:
            if closing and kind == OBSERVED:
                self._in_observation = False
            return None
        if closing:
            return self._on_closer(closing, kind, start, end)
        if kind == TOOL:
            attrs, twice = attributes(raw_attrs)
            if twice:
                return self._malformed(start, end, name, selfclosing, f"the attribute '{twice}' is given twice")
            self._strip_pending()
            if selfclosing:
                return None if self._silent else TagEvent("call", name, start, end, attrs=attrs)
            self._body = _Open(name, start, end, attrs, len(self._out))
            return None
        if self._pending:
            self._expire(end)
        if kind == THINKING:
            self._thinking = self._thinking or not selfclosing
        elif selfclosing:  # an unknown self-closing tag is a tool attempt for the executor to refuse
            return None if self._silent else TagEvent("call", name, start, end, attrs=attributes(raw_attrs)[0])
        elif len(self._pending) < MAX_PENDING:
            self._pending.append(_Open(name, start, end, attributes(raw_attrs)[0], len(self._out), thinking=self._thinking))
        return None

    def _on_closer(self, name: str, kind: int, start: int, end: int) -> TagEvent | None:
        pending = self._pending
        for k in range(len(pending) - 1, -1, -1):
            element = pending[k]
            if element.name == name and start - element.open_end <= MAX_WRAPPER:
                # A short unknown element, closed: a tool attempt (with a name the executor will not know).
                del pending[k:]
                self._truncate(element.mark)
                self._thinking = element.thinking
                if self._silent:
                    return None
                return TagEvent("call", name, element.start, end, attrs=element.attrs,
                                body=self._text_at(element.open_end, start))
        if pending:
            self._expire(end)
        if kind == THINKING:
            self._thinking = False
        return None  # a stray closer (a tool's, an observation's, an unknown one): never shown

    def _on_observation(self, start: int) -> TagEvent:
        """The model began to write an engine result itself: the reply ends here (or, hiding them, its block is dropped)."""
        self._abandon_body(start)
        self._strip_pending()
        if self._hide_observations:
            self._in_observation = True
        return TagEvent("observation", "observation", start, start + len(OBSERVATION))

    def _malformed(self, start: int, end: int, name: str, selfclosing: bool, error: str) -> TagEvent:
        self._pos = end
        self._abandon_body(start)
        self._strip_pending()
        if not selfclosing:  # its body and closer, if they follow, are part of the failed call: never shown
            self._body = _Open(name, start, end, {}, len(self._out), malformed=True)
        return TagEvent("malformed", name, start, end, error=error)

    def _close_body(self, start: int, end: int) -> TagEvent | None:
        body = self._body
        assert body is not None
        self._body = None
        self._truncate(body.mark)
        if body.malformed or self._silent:
            return None
        return TagEvent("call", body.name, body.start, end, attrs=body.attrs, body=self._text_at(body.open_end, start))

    def _overflow(self, at: int) -> TagEvent | None:
        body = self._body
        assert body is not None
        self._body = None
        if body.malformed:
            return None
        if not reads_as_prose(self._text_at(body.open_end, at)):
            self._truncate(body.mark)  # arguments (JSON, say) are never shown to players, as at the stream's end
        return TagEvent("unclosed", body.name, body.start, at, attrs=body.attrs,
                        error=f"the <{body.name}> tag was never closed with </{body.name}>")

    def _abandon_body(self, upto: int) -> bool:
        """An open tool tag that will not close: its body stays if it reads as prose; True if it was an attempt."""
        body = self._body
        if body is None:
            return False
        self._body = None
        if body.malformed:
            return False
        if reads_as_prose(self._text_at(body.open_end, upto)):
            return False  # a tag named in the narration ("the sign reads <roll> in faded paint. ..."): the words stay
        self._truncate(body.mark)
        return True

    def _end_of_stream(self) -> TagEvent | None:
        body = self._body
        self._strip_pending()
        if not self._abandon_body(self._base + len(self._work)):
            return None
        assert body is not None
        return TagEvent("unclosed", body.name, body.start, self._base + len(self._work), attrs=body.attrs,
                        error=f"the <{body.name}> tag was never closed with </{body.name}>")

    def _strip_pending(self) -> None:
        """Unknown elements still open become prose: their tags are already hidden, their bodies stay."""
        self._pending.clear()

    def _expire(self, upto: int) -> None:
        pending = self._pending
        while pending and upto - pending[0].open_end > MAX_WRAPPER:
            pending.pop(0)

    def _truncate(self, mark: int) -> None:
        del self._out[mark:]


_WAIT = object()


def visible_text(prose: str, tool_names: Collection[str] = ()) -> str:
    """What players see of an agent's text: no tool tags, thinking, observations or pings; markdown, not HTML."""
    scanner = TagScanner(tool_names, hide_observations=True, calls=False)
    scanner.feed(prose)
    scanner.finish()
    scanner.events()
    return finalize(scanner.prose())
