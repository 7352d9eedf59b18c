"""The streaming tag scanner and the cleaning of replies."""

from __future__ import annotations

import json

import pytest

from engine.markup import escape
from engine.tags import MAX_BODY, TagScanner, visible_text
from engine.tools import TOOLS


def scan_all(text: str, step: int | None = None):
    """Feed text in chunks of `step` (all at once by default); return the first event and where it came."""
    sc = TagScanner(TOOLS)
    step = step or len(text)
    for i in range(0, len(text), step):
        event = sc.feed(text[i:i + step])
        if event:
            return event, i + step
    return sc.finish(), None


def test_simple_tag_with_body():
    event, _ = scan_all("You swing. <roll>1d20+3</roll> and then")
    assert (event.kind, event.name, event.body) == ("call", "roll", "1d20+3")
    assert "You swing. <roll>1d20+3</roll> and then"[event.start:event.end] == "<roll>1d20+3</roll>"


def test_self_closing_tag_with_attributes():
    event, _ = scan_all("""Here. <modify_inventory item="healing potion" quantity='1'/> Done.""")
    assert event.kind == "call" and event.attrs == {"item": "healing potion", "quantity": "1"} and event.body == ""


@pytest.mark.parametrize("step", [1, 2, 3, 5, 8])
def test_tag_split_across_chunks_is_found_once_complete(step):
    text = 'Ok <update_hp target="Aria" amount="3"/> tail text that follows'
    event, consumed = scan_all(text, step)
    assert event.kind == "call" and event.attrs["amount"] == "3"
    # found as soon as the chunk holding the tag's last character arrived, not at the end
    assert consumed is not None and consumed - step < event.end <= consumed


def test_first_of_two_tags_comes_first_then_resume_finds_second():
    text = "<roll>1d4</roll> and <roll>1d6</roll>"
    sc = TagScanner(TOOLS)
    first = sc.feed(text)
    assert first.body == "1d4"
    sc.resume(first.end)
    second = sc.finish()
    assert second.body == "1d6"


def test_unclosed_known_tag_is_reported_only_at_the_end():
    sc = TagScanner(TOOLS)
    assert sc.feed("I roll <roll>1d20+2 and keep talking") is None
    event = sc.finish()
    assert event.kind == "unclosed" and event.name == "roll" and "never closed" in event.error


def test_open_tag_never_finished():
    sc = TagScanner(TOOLS)
    assert sc.feed('<modify_inventory item="rope"') is None
    assert sc.finish().kind == "unclosed"


def test_malformed_attributes_on_known_tool():
    event, _ = scan_all('<modify_inventory item=rope quantity=1/> ok')
    assert event.kind == "malformed" and "quotes" in event.error


def test_duplicate_attribute_is_malformed():
    event, _ = scan_all('<update_hp amount="1" amount="2"/>')
    assert event.kind == "malformed" and "twice" in event.error


def test_unknown_closed_element_is_a_call_for_the_executor_to_refuse():
    event, _ = scan_all("<cast_spell>fireball</cast_spell>")
    assert event.kind == "call" and event.name == "cast_spell"


def test_unknown_unclosed_element_is_prose_and_does_not_block_a_later_tool():
    event, _ = scan_all("*grins* <grin> then <roll>1d6</roll>", step=4)
    assert event.name == "roll"
    assert scan_all("a <grin> b")[0] is None


@pytest.mark.parametrize("prose", ["HP < 5 now", "I <3 this", "a<b", "x < y > z", "<thinking>plan</thinking> ok", "</roll> stray"])
def test_prose_with_angle_brackets_is_not_a_tag(prose):
    assert scan_all(prose)[0] is None


def test_tag_inside_thinking_is_still_a_call():
    event, _ = scan_all("<thinking>need a check <roll>1d20</roll></thinking>")
    assert event.name == "roll"


def test_model_writing_an_observation_is_caught():
    event, _ = scan_all("The result: <observation>20</observation>")
    assert event.kind == "observation"


def test_partial_tag_name_waits_for_more():
    sc = TagScanner(TOOLS)
    assert sc.feed("a <ro") is None
    assert sc.feed("ll>2d6</ro") is None
    assert sc.feed("ll>").body == "2d6"


def test_overlong_body_is_judged_unclosed_without_waiting_for_the_end():
    sc = TagScanner(TOOLS)
    event = sc.feed("<roll>" + "x" * (MAX_BODY + 1000))
    assert event is not None and event.kind == "unclosed"


def test_an_overlong_body_of_arguments_is_never_shown_but_narration_after_a_stray_tag_stays():
    foes = json.dumps({"enemy": [{"name": f"Bandit {n}", "hp": 11, "ac": 12, "attacks": "Scimitar +3 (1d6+1)"}
                                 for n in range(400)]})
    sc = TagScanner(TOOLS)
    event = sc.feed("Steel rings out! <start_combat>" + foes)
    assert event is not None and event.kind == "unclosed" and sc.prose() == "Steel rings out! "
    story = "The old sign reads <roll> in faded paint. " + "The wind howls over the moor tonight. " * 500
    sc = TagScanner(TOOLS)
    event = sc.feed(story)
    assert event is not None and event.kind == "unclosed" and "The wind howls" in sc.prose()


def test_a_fight_of_twelve_foes_with_stat_blocks_fits_in_one_tag():
    foe = {"name": "Bandit Captain", "hp": 65, "ac": 15, "initiative_bonus": 3, "count": 1,
           "attacks": "Multiattack: three melee attacks, two with its scimitar and one with its dagger. Scimitar: +5 to hit, "
                      "reach 5 ft., one target, 1d6+3 slashing. Dagger: +5 to hit, reach 5 ft. or range 20/60 ft., one "
                      "target, 1d4+3 piercing. Parry: +2 AC against one melee attack that would hit it.",
           "abilities": {"strength": 15, "dexterity": 16, "constitution": 14, "intelligence": 14, "wisdom": 11,
                         "charisma": 14}}
    body = json.dumps({"enemy": [dict(foe, name=f"Bandit Captain {n}") for n in range(12)]})
    assert len(body) > 4000
    event = TagScanner(TOOLS).feed(f"<start_combat>{body}</start_combat>")
    assert event is not None and event.kind == "call" and event.body == body


def test_visible_text_strips_thinking_observations_and_pings():
    text = "<thinking>secret plan</thinking>Hello @everyone and @here, <@&123> too.<observation>x</observation>\n\n\n\nEnd"
    out = visible_text(text)
    assert "secret" not in out and "observation" not in out and "<@&" not in out
    assert "@everyone" not in out and "@here" not in out
    assert out.endswith("\n\nEnd")


def test_visible_text_drops_an_unclosed_thinking_block():
    assert visible_text("Shown.<thinking>never finished") == "Shown."


def test_escape_neutralises_tags():
    assert escape('<roll>1d20</roll> & "x"') == '&lt;roll&gt;1d20&lt;/roll&gt; &amp; "x"'
    assert scan_all(escape("<roll>1d20</roll>"))[0] is None


@pytest.mark.parametrize("step", [1, 3, 4, 100])
def test_a_tool_inside_an_unknown_wrapper_is_found_however_the_stream_is_chunked(step):
    event, _ = scan_all("<scene>You hear <roll>1d20+2</roll> steps</scene>", step)  # not a formatting tag
    assert (event.kind, event.name) == ("call", "roll")


@pytest.mark.parametrize("prose", ["<em>Quiet.</em>", "<b>Loud!</b>", "line<br/>break", "<i>sighs</i>", "<p>para</p>"])
def test_formatting_is_prose_not_a_tool_attempt(prose):
    assert scan_all(prose)[0] is None


def test_visible_text_turns_formatting_into_markdown():
    assert visible_text("<em>Quiet</em>, <b>loud</b>,<br>next <span>x</span>") == "*Quiet*, **loud**,\nnext x"


def test_mass_mentions_are_neutralised_even_glued_to_a_word():
    assert "@everyone" not in visible_text("@everyonex @heresy")
