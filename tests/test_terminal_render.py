"""The terminal's rendering: Markdown without asterisks (the same however the stream is cut), word wrapping,
nothing from the model that could steer the terminal, and tables for sheets, status and combat."""

from __future__ import annotations

import re

import pytest

from bot.terminal.render import Markdown, Wrapper, combat_tracker, rendered, sheet, status, visible
from tests.conftest import call, ctx_for

SAMPLES = [
    "**The quay** is *quiet*, and _nothing_ moves.",
    "- a gull\n* a net\n  + a knotted rope\n## The Lantern **dark**\n> an old saying\n>close\n1. first",
    "5 * 3 = 15, snake_case_name, a ** b, and a lone _ underscore.",
    "**never closed\nthe next line is plain",
    "`<roll>` is written *literally* in `code`",
    "***both at once*** then plain",
    "| Item | Cost |\n|:---|---:|\n| **rope** | 1 gp |\n  | lamp | 5 sp |\nAfter the table.",
    "See [the harbour map](https://example.org/map) and [Saltmere](Saltmere), not [1] or [a note] (aside).",
    "The ~~old~~ new lantern, ~ a tilde, `~~code~~`.",
    "Red \x1b[31mwords\x1b[0m, a title \x1b]0;pwned\x07 here, \x9b2J and \x1bc done.",
]


def fed(text: str, ansi: bool, step: int) -> str:
    markdown = Markdown(ansi)
    return "".join(markdown.feed(text[k:k + step]) for k in range(0, len(text), step)) + markdown.flush()


@pytest.mark.parametrize("text", SAMPLES)
@pytest.mark.parametrize("ansi", [False, True])
def test_markdown_reads_the_same_however_the_stream_is_cut(text, ansi):
    whole = fed(text, ansi, len(text))
    assert all(fed(text, ansi, step) == whole for step in (1, 2, 3, 5, 7))


def test_emphasis_shows_as_style_not_asterisks_and_literals_stay():
    plain = [fed(t, False, 4) for t in SAMPLES]
    assert plain[0] == "The quay is quiet, and nothing moves."
    assert plain[1] == "• a gull\n• a net\n  • a knotted rope\nThe Lantern dark\n│ an old saying\n│ close\n1. first"
    assert plain[2] == SAMPLES[2]  # multiplication, snake_case, spaced asterisks and a lone underscore are text
    assert plain[4] == "<roll> is written literally in code"
    coloured = fed(SAMPLES[0], True, 3)
    assert "\x1b[1mThe quay\x1b[0m" in coloured and "\x1b[3mquiet\x1b[0m" in coloured and "*" not in coloured
    runaway = fed(SAMPLES[3], True, 2)
    assert runaway.split("\n")[0].endswith("\x1b[0m") and "\x1b[1m" not in runaway.split("\n")[1]


def test_nothing_the_model_writes_can_steer_the_terminal():
    hostile = "Hello\x1b[2J\x1b]0;pwned\x07 there\rOVER\x9b31m\x08 end"
    out = fed(hostile, True, 3)
    assert "\x1b[2J" not in out and "\x07" not in out and "\r" not in out and "\x9b" not in out and "\x08" not in out
    assert visible(out) == "Hello thereOVER end"  # whole sequences go: no "[2J" left on the screen


def test_tables_links_and_strikethrough_show_without_markdown():
    plain = [fed(t, False, 3) for t in SAMPLES[6:]]
    assert plain[0] == "Item │ Cost\nrope │ 1 gp\nlamp │ 5 sp\nAfter the table."  # the rule row is gone
    assert plain[1] == ("See the harbour map (https://example.org/map) and Saltmere, not [1] or [a note] (aside).")
    assert plain[2] == "The old new lantern, ~ a tilde, ~~code~~."
    assert plain[3] == "Red words, a title  here,  and  done."
    assert "\x1b[9mold\x1b[0m" in fed(SAMPLES[8], True, 2)  # struck through where the terminal can
    half = Markdown(False)  # an escape sequence cut by the stream leaves nothing either
    assert half.feed("a \x1b[3") + half.feed("1mred") + half.flush() == "a red"


def test_wrapping_never_cuts_a_word_and_colour_codes_take_no_room():
    text = ("The **lantern** on Gannet Rock has been *dark* for three weeks. " * 6).strip()
    assert visible(rendered(text, True)) == rendered(text, False)  # colour changes nothing of the layout
    wrapper, markdown = Wrapper("  ", 40), Markdown(True)
    streamed = "  " + "".join(wrapper.feed(markdown.feed(text[k:k + 3])) for k in range(0, len(text), 3))
    streamed += wrapper.feed(markdown.flush()) + wrapper.flush()
    for line in streamed.split("\n"):
        assert len(visible(line).rstrip()) <= 40 and line.startswith("  ")
    words = visible(streamed).split()
    assert words == fed(text, False, len(text)).split()  # every word whole, in order


def test_sheet_status_and_tracker_are_tables(state):
    ch = state.characters["u1"]
    text = sheet(ch, ansi=False)
    assert text.startswith("Aria — level 1 human fighter, sellsword\n")
    assert re.search(r"HP +AC +Speed +Hit dice +Conditions\n─+\n\d+/\d+ +19 \(chain mail, defense style, shield\) +30 ft +1d10 +none", text)
    assert re.search(r"Weapon +To hit +Damage +Properties\n─+\nlongsword +\+5 +1d8\+3 slashing +versatile\n"
                     r"light crossbow +\+4 +1d8\+2 piercing +ammunition, loading, two-handed, range 80/320\n", text)
    assert "Features and traits: Fighting Style, Second Wind, Versatile, Old Company" in text
    assert "Languages: Common, Dwarvish" in text
    assert re.search(r"STR +DEX +CON +INT +WIS +CHA\n─+\n( +\d+){6}\n( +[+-]\d+){6}", text)
    assert re.search(r"healing potion +1", text) and "Coin: " in text
    assert "\x1b[" not in text and "\x1b[1m" in sheet(ch, ansi=True)
    assert call(ctx_for(state), '<start_combat>{"enemy": [{"name": "Crab", "hp": 4, "ac": 11}]}</start_combat>').ok
    board = combat_tracker(state, ansi=False)
    assert re.search(r"Combat, round 1\n", board) and board.count("▶") == 1
    assert re.search(r"Name +Side +Init +AC +HP", board) and "Crab" in board and "Aria" in board
    assert "Combat, round 1" in status(state, ansi=False) and "Party" in status(state, ansi=False)
