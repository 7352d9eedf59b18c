"""How the terminal shows things: the model's Markdown as a terminal shows it (bold, italics, bullets; never
asterisks), word-wrapped as it streams, and character sheets, party status and the combat tracker as tables."""

from __future__ import annotations

import io
import re
import shutil
import textwrap
from typing import TYPE_CHECKING

from engine.shops import closed_because, shops_here
from engine.tools.combat import tracker_rows
from engine.visibility import ways_out

if TYPE_CHECKING:
    from engine.state import Character, GameState

# Anything but a newline or a tab that could steer the terminal (escape sequences, carriage returns, bells):
# the model's text is untrusted and must not move the cursor, clear the screen or retitle the window.
# A whole escape sequence goes, not only its ESC (which left "[31m" on the screen): CSI (also as the one-byte
# \x9b), OSC and the like ended by BEL or ST, and two-character escapes.
_SEQUENCE = re.compile(r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]|(?:\x1b[\]P^_X]|[\x90\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"
                       r"|\x1b[ -/]*[0-~]")
# The start of a sequence that more text may finish: held back while streaming.
_OPEN_SEQUENCE = re.compile(r"(?:(?:\x1b\[|\x9b)[0-?]*[ -/]*|(?:\x1b[\]P^_X]|[\x90\x9d\x9e\x9f])[^\x07\x1b\x9c]*\x1b?|\x1b[ -/]*)$")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_TABLE_RULE = re.compile(r" {0,3}\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*")
_LINK = re.compile(r"\[([^\]\n]{1,200})\]\(([^)\s]{0,300})\)")
_MAYBE_LINK = re.compile(r"\[[^\]\n]{0,200}(?:\](?:\([^)\s]{0,300})?)?")
_LINE_OPENING = re.compile(r"( {0,6})(?:([-*+]) |(#{1,6}) |>(?: |(?=[^ \n])))")
_MAYBE_OPENING = re.compile(r" {0,6}(?:[-*+]|#{1,6}|>)?")  # what may still become an opening with more text
_TOKEN = re.compile(r"\x1b\[[0-9;]*m|\n| |[^\x1b\n ]+")
_SGR = re.compile(r"\x1b\[[0-9;]*m")


def clean(text: str) -> str:
    """Text without anything that could steer the terminal (whole escape sequences, then stray control bytes)."""
    return _CONTROL.sub("", _SEQUENCE.sub("", text))


def screen_width() -> int:
    return max(40, min(100, shutil.get_terminal_size((88, 20)).columns))


class Markdown:
    """The model's Markdown, fed as it arrives; `feed` returns what can be shown now (a marker that may be the
    first half of another is held back), `flush` the rest. Emphasis does not run past the end of a line, so a
    marker the model forgot to close cannot turn the rest of the story bold. With `ansi` off: the same text
    without colour codes (and still without asterisks)."""

    def __init__(self, ansi: bool) -> None:
        self.ansi = ansi
        self.pending = ""
        self.bold = self.code = self.heading = self.struck = False
        self.italic = ""  # the marker that opened italics ("*" or "_"), or ""
        self.line_start = True
        self.prev = " "  # the last character shown, for word-boundary tests
        self.raw = ""  # an escape sequence begun at the end of what came, until the rest comes

    def feed(self, text: str) -> str:
        self.raw += text.replace("\r\n", "\n")
        held = _OPEN_SEQUENCE.search(self.raw[-400:])
        cut = len(self.raw) - (len(held.group(0)) if held and held.group(0) else 0)
        self.pending += clean(self.raw[:cut])
        self.raw = self.raw[cut:]
        return self._drain(final=False)

    def flush(self) -> str:
        self.pending += clean(self.raw)  # a sequence never finished: its bytes go, not shown
        self.raw = ""
        return self._drain(final=True) + self._end_line()

    def _style(self) -> str:
        if not self.ansi:
            return ""
        codes = [c for c, on in (("1", self.bold or self.heading), ("3", self.italic), ("9", self.struck),
                                 ("36", self.code)) if on]
        return "\x1b[0m" + (f"\x1b[{';'.join(codes)}m" if codes else "")

    def _end_line(self) -> str:
        styled = self.bold or self.heading or self.italic or self.code or self.struck
        self.bold = self.code = self.heading = self.struck = False
        self.italic = ""
        return "\x1b[0m" if styled and self.ansi else ""

    def _table_row(self, line: str) -> str | None:
        """A Markdown table's row as the terminal shows it (cells between rules, no pipes at the ends); None for
        the rule under its header, which is not shown."""
        if _TABLE_RULE.fullmatch(line):
            return None
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        return " │ ".join(cells)

    def _drain(self, final: bool) -> str:
        s, out, i, n = self.pending, [], 0, len(self.pending)
        while i < n:
            if self.line_start and s[i:i + 4].lstrip(" ").startswith("|"):
                end = s.find("\n", i)
                if end < 0 and not final:
                    break  # a table's row is shown whole: its rule is left out, its pipes become rules
                end = n if end < 0 else end
                row = self._table_row(s[i:end])
                if row is None:  # the rule: its line goes, newline and all
                    s = s[:i] + s[end + 1:]
                    n = len(s)
                    continue
                s = s[:i] + row + s[end:]
                n = len(s)
                self.line_start, self.prev = False, " "
                continue
            if self.line_start:
                rest = s[i:]
                opening = _LINE_OPENING.match(rest)
                if opening is None and not final and _MAYBE_OPENING.fullmatch(rest):
                    break  # "-", "##" or ">" alone: the next character decides
                self.line_start = False
                if opening is not None:
                    indent, bullet, hashes = opening.groups()
                    if bullet:
                        out.append(f"{indent}• ")
                    elif hashes:
                        self.heading = True
                        out.append(self._style())
                    else:
                        out.append(f"{indent}│ ")
                    i += opening.end()
                    self.prev = " "
                continue
            c = s[i]
            if c == "\n":
                out.append(self._end_line() + "\n")
                self.line_start, self.prev = True, " "
                i += 1
                continue
            if c == "`":
                self.code = not self.code
                out.append(self._style())
                i += 1
                continue
            if not self.code and c == "[":
                link = _LINK.match(s, i)
                if link is None and not final and _MAYBE_LINK.fullmatch(s, i):
                    break  # "[the map](" so far: a link, or only brackets? The next characters decide
                if link is not None:  # [text](url): the text, and where it leads unless that is the text
                    text, url = link.groups()
                    shown = text if not url or url == text else f"{text} ({url})"
                    s = s[:i] + shown.replace("[", "(").replace("]", ")") + s[link.end():]
                    n = len(s)
                    continue
            if not self.code and c == "~" and s.startswith("~~", i):
                self.struck = not self.struck
                out.append(self._style())
                i += 2
                continue
            if not self.code and c == "~" and i + 1 >= n and not final:
                break  # "~" at the end: the first of "~~"?
            if self.code or c not in "*_":
                out.append(c)
                self.prev = c
                i += 1
                continue
            double = s.startswith(c * 2, i)
            width = 2 if double else 1
            if i + width >= n and not final:
                break  # a marker at the end: is it "**", and what follows it?
            after = s[i + width] if i + width < n else " "
            if double and c == "*":
                if self.bold and not self.prev.isspace():
                    self.bold = False
                elif not self.bold and not after.isspace():
                    self.bold = True
                else:
                    out.append("**")
                    i += 2
                    continue
                out.append(self._style())
                i += 2
                continue
            if self.italic == c and not self.prev.isspace() and (c == "*" or not after.isalnum()):
                self.italic = ""
            elif not self.italic and not after.isspace() and (c == "*" or not self.prev.isalnum()):
                self.italic = c
            else:  # a literal: 5 * 3, snake_case, a lone underscore
                out.append(c)
                self.prev = c
                i += 1
                continue
            out.append(self._style())
            i += 1
        self.pending = s[i:]
        return "".join(out)


class Wrapper:
    """Word-wraps text fed piece by piece (colour codes take no room), indenting every line; a word is held
    until it is whole, so it is never cut at the screen's edge."""

    def __init__(self, indent: str = "  ", width: int | None = None) -> None:
        self.indent, self.width = indent, width or screen_width()
        self.column = len(indent)  # the caller has written the first line's indent
        self.word: list[str] = []
        self.word_length = 0

    def feed(self, text: str) -> str:
        out: list[str] = []
        for token in _TOKEN.findall(text):
            if token.startswith("\x1b"):
                if self.word:
                    self.word.append(token)
                else:
                    out.append(token)
            elif token == "\n":
                out.append(self._word() + "\n" + self.indent)
                self.column = len(self.indent)
            elif token == " ":
                out.append(self._word())
                if self.column > len(self.indent):  # no spaces at the start of a wrapped line
                    out.append(" ")
                    self.column += 1
            else:
                self.word.append(token)
                self.word_length += len(token)
        return "".join(out)

    def flush(self) -> str:
        return self._word()

    def _word(self) -> str:
        if not self.word:
            return ""
        word, length = "".join(self.word), self.word_length
        self.word, self.word_length = [], 0
        if self.column + length > self.width and self.column > len(self.indent):
            self.column = len(self.indent) + length
            return "\n" + self.indent + word
        self.column += length
        return word


def wrap(text: str, indent: str = "") -> str:
    width = screen_width() - len(indent)
    paragraphs = clean(text).split("\n")
    return "\n".join(textwrap.fill(p, width, initial_indent=indent, subsequent_indent=indent) if p.strip() else "" for p in paragraphs)


def rendered(text: str, ansi: bool, indent: str = "  ") -> str:
    """A whole reply as the terminal shows it: Markdown rendered, wrapped and indented."""
    if not text.strip():
        return ""
    markdown, wrapper = Markdown(ansi), Wrapper(indent)
    return indent + wrapper.feed(markdown.feed(text) + markdown.flush()) + wrapper.flush()


def markdown_text(text: str, ansi: bool) -> str:
    """A block of the engine's Markdown (the journal) as the terminal shows it, wrapped, without indent."""
    return "\n".join(rendered(line, ansi, indent="") if line.strip() else "" for line in text.split("\n"))


def visible(text: str) -> str:
    """The text without its colour codes."""
    return _SGR.sub("", text)


def bold(text: str, ansi: bool) -> str:
    return f"\x1b[1m{text}\x1b[0m" if ansi else text


# -- tables ----------------------------------------------------------------------------------------------------------

def _table(title: str | None = None, *columns: str, **options):
    from rich import box
    from rich.table import Table

    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False,
                  header_style="bold", **options)
    for column in columns:
        justify = "right" if column.endswith(">") else "left"
        table.add_column(column.rstrip(">"), justify=justify)
    return table


def _show(ansi: bool, *parts) -> str:
    """Rich renderables as text for the terminal (colour only when the screen takes it)."""
    from rich.console import Console
    from rich.text import Text

    buffer = io.StringIO()
    console = Console(file=buffer, width=screen_width(), color_system="standard" if ansi else None,
                      force_terminal=ansi, no_color=not ansi, highlight=False, emoji=False, markup=False)
    for n, part in enumerate(parts):
        if n and not isinstance(part, Text):
            console.print()  # a table stands apart from what comes before it
        console.print(part)
    return "\n".join(line.rstrip() for line in buffer.getvalue().rstrip("\n").split("\n"))


def sheet(ch: Character, ansi: bool, advancement: str = "") -> str:
    """A character sheet: the numbers that matter in play, the six abilities, weapons, features and the pack;
    `advancement`, the progress to the next level."""
    from rich.text import Text

    from engine.rules import origins, proficiencies
    from engine.rules.life import hp_line
    from engine.rules import effects, features
    from engine.rules.attacks import profile
    from engine.rules.equipment import carried_weapons
    from engine.tools.character import ac_line, sheet_features

    bg = origins.background_of(ch)
    head = Text(f"{ch.name}", style="bold")
    head.append(f" — level {ch.level} {origins.origin(ch)}" + (f", {bg.name}" if bg else "")
                + (f" · {advancement}" if advancement else ""), style="")
    vitals = _table(None, "HP", "AC", "Speed", "Hit dice", "Conditions")
    vitals.add_row(hp_line(ch), ac_line(ch), f"{effects.speed(ch, origins.speed(ch))} ft",
                   f"{ch.hit_dice}d{ch.hit_die}", ", ".join(ch.conditions) or "none")
    names = list(type(ch.abilities).model_fields)
    abilities = _table(None, *(f"{a[:3].upper()}>" for a in names))
    abilities.add_row(*(str(getattr(ch.abilities, a)) for a in names))
    abilities.add_row(*(f"{ch.abilities.mod(a):+d}" for a in names))
    parts: list[object] = [head, vitals, abilities, Text(proficiencies(ch))]
    if ch.effects:
        parts.append(Text("Spells on them: " + "; ".join(effects.describe(e) for e in ch.effects)))
    parts += [Text(f"Features left: {line}") for line in features.lines(ch)]
    weapons = _table(None, "Weapon", "To hit>", "Damage", "Properties")
    for w in carried_weapons(ch):
        attack = profile(ch, w)
        reach = [f"range {w.range[0]}/{w.range[1]}"] if w.range else []
        weapons.add_row(w.name, f"{attack.bonus:+d}", f"{attack.damage} {w.type}", ", ".join([*w.properties, *reach]))
    if weapons.row_count:
        parts.append(weapons)
    features = ", ".join(f.name for f in sheet_features(ch))
    if features:
        parts.append(Text(f"Features and traits: {features}"))
    if origins.languages(ch):
        parts.append(Text(f"Languages: {', '.join(origins.languages(ch))}"))
    pack = _table(None, "Carrying", "Qty>")
    for item in ch.inventory:
        pack.add_row(item.name, str(item.quantity))
    if not ch.inventory:
        pack.add_row("nothing", "")
    from engine.rules import spells

    casting = [Text("\n".join(spells.sheet_lines(ch)))] if spells.sheet_lines(ch) else []
    return _show(ansi, *parts, *casting, pack, Text(f"Coin: {ch.currency.describe()}"))


def inventory(ch: Character, ansi: bool) -> str:
    pack = _table(f"{ch.name} carries", "Item", "Qty>")
    for item in ch.inventory:
        pack.add_row(item.name, str(item.quantity))
    if not ch.inventory:
        pack.add_row("nothing", "")
    from rich.text import Text
    return _show(ansi, pack, Text(f"Coin: {ch.currency.describe()}"))


def combat_tracker(state: GameState, ansi: bool) -> str:
    """The fight in initiative order, whose turn it is marked."""
    table = _table(f"Combat, round {state.combat.round}", " ", "Name", "Side", "Init>", "AC>", "HP>", "Spells on them")
    for r in tracker_rows(state):
        table.add_row("▶" if r.now else "", r.who.name, r.who.faction, str(r.who.initiative), str(r.ac),
                      "down" if r.hp == 0 else f"{r.hp}/{r.max_hp}", ", ".join(r.spells), style="bold" if r.now else None)
    return _show(ansi, table)


def status(state: GameState, ansi: bool) -> str:
    """Where the party is, who is in it, who else is here, the quests under way, and any fight."""
    from rich.text import Text

    loc = state.location()
    parts: list[object] = [Text(loc.name, style="bold"), Text(loc.description)]
    party = _table(None, "Party", "Class", "HP>", "Conditions")
    for pid, c in state.characters.items():
        if pid in state.party.player_ids:
            party.add_row(c.name, c.char_class, f"{c.hp}/{c.max_hp}", ", ".join(c.conditions) or "")
    for npc_id in state.party.npc_ids:
        npc = state.npcs[npc_id]
        party.add_row(npc.name, "companion", f"{npc.hp}/{npc.max_hp}" if npc.max_hp else "", "")
    parts.append(party if party.row_count else Text("Nobody in the party yet."))
    here = [n.name for n in state.present_npcs() if n.id not in state.party.npc_ids]
    parts.append(Text(f"Here: {', '.join(here) or 'no one else'}"))
    ways = [loc.name + ("" if open_ else " (closed)") for loc, open_ in ways_out(state)]
    parts.append(Text(f"Ways out: {', '.join(ways) or 'none that you know of'}"))
    active = [q.title for q in state.quests.values() if q.status == "active"]
    if active:
        parts.append(Text("Quests: " + "; ".join(active)))
    text = _show(ansi, *parts)
    return text + ("\n" + combat_tracker(state, ansi) if state.combat.active else "")


def shop(state: GameState, ansi: bool) -> str:
    """The shops where the party is: each item's price and what is left, as players may see them."""
    from rich.text import Text

    here = shops_here(state)
    if not here:
        return f"Nobody sells anything at {state.location().name}."
    parts: list[object] = []
    for found in here:
        keeper = state.npcs.get(found.keeper or "")
        table = _table(found.name + (f", kept by {keeper.name}" if keeper else ""), "Item", "Price>", "Left>")
        for entry in found.stock:
            info = state.items.get(entry.item)
            if info is not None:
                table.add_row(info.name, str(entry.price or info.price), "plenty" if entry.quantity is None else str(entry.quantity))
        closed = closed_because(state, found)
        how = f"Closed: {closed}." if closed else "/buy ITEM [N]" + (
            f"; /sell ITEM [N] (it pays {found.buy_rate}% of the price)" if found.buys else "")
        parts += [table, Text(how)]
    return _show(ansi, *parts)
