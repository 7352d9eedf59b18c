"""The grounding agents: a rules referee, a scene planner, NPC personas drawn from lore; each falls back safely."""

from __future__ import annotations

import json
import re

from engine import ModelError
from engine.grounding import RulesRefusal
from engine.basics import AgentType
from tests.conftest import CHANNEL
from tests.test_lore_turn import embedder, lore_table, set_grounding  # noqa: F401  (fixtures)

PRONE_SHOT = "Lying prone on the quay, I shoot my crossbow at the gull."


def cite_of(request, heading: str) -> int:
    return int(re.search(rf"\[(\d+)\] {re.escape(heading)}", request.messages[-1].content).group(1))


def verdict(kind: str, **extra):
    def reply(request):
        assert request.agent is AgentType.REFEREE
        n = cite_of(request, "Combat › Ranged Attacks While Prone")
        return json.dumps({"verdict": kind, "cite": n, **extra})
    return reply


async def test_the_referee_refuses_an_action_the_rules_forbid_and_nothing_happens(lore_table):
    set_grounding(lore_table, referee=True)
    try:
        await lore_table.turn(PRONE_SHOT, verdict("block", reason="A prone creature cannot shoot a crossbow.",
                                                  alternative="Stand up first, then shoot."))
        raise AssertionError("the action should have been refused")
    except RulesRefusal as exc:
        assert exc.message == ("A prone creature cannot shoot a crossbow. (Rules: Combat › Ranged Attacks While Prone) "
                               "You could stand up first, then shoot.")
    assert [r.agent for r in lore_table.model.requests] == [AgentType.REFEREE]  # the narrator was never asked
    state = await lore_table.state()
    assert state.turn == 0
    session = await lore_table.engine.session(CHANNEL)
    [kept] = [m for m in await lore_table.store.messages(session.id, include_failed=True) if m.text == PRONE_SHOT]
    assert kept.status == "failed"  # kept, marked, and the reason in the turn log
    assert (await lore_table.store.turns(session.id))[-1]["error"].startswith("RulesRefusal")


async def test_a_warning_reaches_the_agent_and_the_action_goes_on(lore_table):
    set_grounding(lore_table, referee=True)
    result = await lore_table.turn(PRONE_SHOT, verdict("warn", reason="Standing up first costs half your movement."),
                                   "You scramble up and loose a bolt.")
    narrator = lore_table.model.requests[-1]
    assert narrator.agent is AgentType.NARRATIVE and "## Rules referee\nStanding up first costs half your movement." in narrator.context
    assert result.reply == "You scramble up and loose a bolt." and len(result.model_calls) == 2  # at most two calls


async def test_the_referee_approves_when_in_doubt_failed_or_unreadable(lore_table):
    set_grounding(lore_table, referee=True)
    for answer in ('{"verdict": "approve", "reason": ""}', "I think it is fine!", ModelError("down", retryable=False)):
        result = await lore_table.turn(PRONE_SHOT, answer, "The bolt flies.")
        assert result.reply == "The bolt flies." and "## Rules referee" not in lore_table.model.requests[-1].context
    # A block with no reason or no passage to show for it is not a refusal: the agent is only warned.
    result = await lore_table.turn(PRONE_SHOT, '{"verdict": "block", "reason": "", "cite": 99}', "The bolt flies.")
    assert result.reply == "The bolt flies." and "## Rules referee" in lore_table.model.requests[-1].context
    await lore_table.turn("I whistle a sea shanty.", "You whistle.")  # no rules passage: no referee call
    assert lore_table.model.requests[-1].agent is AgentType.NARRATIVE
    assert lore_table.model.requests[-2].agent is AgentType.NARRATIVE


async def test_the_planner_hands_a_question_to_the_npc_present_or_falls_back(lore_table):
    set_grounding(lore_table, planner=True)
    result = await lore_table.turn("What happened to the lighthouse keeper?",
                                   '{"answerer": "ysolde-marrick", "move_to": null}', "\"He drowned,\" she says.")
    assert result.agent is AgentType.NPC and result.npc.id == "ysolde-marrick"
    assert [r.agent for r in lore_table.model.requests] == [AgentType.PLANNER, AgentType.NPC]
    session = await lore_table.engine.session(CHANNEL)
    stored = [m for m in await lore_table.store.messages(session.id) if m.text == "What happened to the lighthouse keeper?"]
    assert stored[0].npc_id == "ysolde-marrick"  # the log says whom it was said to
    fallback = await lore_table.turn("I look around.", '{"answerer": "nobody-here", "move_to": "the-moon"}', "Fog.")
    assert fallback.agent is AgentType.NARRATIVE and (await lore_table.state()).current_location == "saltmere-quay"
    moved = await lore_table.turn("I head into the tavern.", '{"answerer": "narrator", "move_to": "brine-cup-tavern"}',
                                  "Warmth and smoke.")
    assert moved.calls[0].name == "change_location" and moved.calls[0].ok
    assert (await lore_table.state()).current_location == "brine-cup-tavern"
    assert "ysolde-marrick" not in [n.id for n in (await lore_table.state()).present_npcs()]


async def test_an_npc_persona_is_drawn_from_lore_once_and_kept(lore_table):
    set_grounding(lore_table, persona=True)

    def card(request):
        assert request.agent is AgentType.PERSONA and "grew up on Net Lane" in request.messages[-1].content
        n = cite_of(request, "People of Saltmere › Ysolde Marrick's Youth")
        return json.dumps({"speech_style": "Clipped sea-captain orders.", "traits": ["hates waste", "keeps ledgers"],
                           "background": "Grew up on Net Lane.", "knows": ["every boat in the harbor"],
                           "example_lines": ["Name and cargo.", "Tide waits for no one."], "citations": [n, 42]})

    first = await lore_table.turn("@Ysolde who are you?", card, "\"Harbormaster. Name and cargo.\"")
    assert first.agent is AgentType.NPC and len(first.model_calls) == 2
    npc_prompt = lore_table.model.requests[-1].system
    assert "## Your character card" in npc_prompt and "Clipped sea-captain orders." in npc_prompt
    ysolde = (await lore_table.state()).npcs["ysolde-marrick"]
    assert ysolde.card.traits == ["hates waste", "keeps ledgers"]
    assert ysolde.card.citations == ["adventure:saltmere-lantern:people-of-saltmere.ysolde-marrick-s-youth"]
    again = await lore_table.turn("@Ysolde and the lighthouse?", "\"Dark three weeks.\"")
    assert len(again.model_calls) == 1 and lore_table.model.requests[-1].system == npc_prompt  # kept: no new call


async def test_a_persona_that_fails_leaves_the_adventures_persona_and_the_npc_still_answers(lore_table):
    set_grounding(lore_table, persona=True)
    result = await lore_table.turn("@Ysolde who are you?", "not json at all", "\"Harbormaster.\"")
    assert result.reply == "\"Harbormaster.\"" and (await lore_table.state()).npcs["ysolde-marrick"].card is None
    assert "## Your character card" not in lore_table.model.requests[-1].system


async def test_at_most_one_grounding_call_runs_in_a_turn(lore_table):
    set_grounding(lore_table, planner=True, persona=True, referee=True)
    result = await lore_table.turn("Tell me about yourself, harbormaster.",
                                   '{"answerer": "ysolde-marrick", "move_to": null}', "\"I keep the harbor.\"")
    assert [r.agent for r in lore_table.model.requests] == [AgentType.PLANNER, AgentType.NPC]  # persona waits
    assert len(result.model_calls) == 2


async def test_a_sheet_changed_after_the_planner_moved_the_party_shows_changed_next_turn(lore_table):
    # The planner's move makes the working copy the turn's own before the context is written; a blow after that
    # changes a character the next turn's context must show changed (no sheet kept from before the blow).
    set_grounding(lore_table, planner=True)
    await lore_table.turn("I head into the tavern.", '{"answerer": "narrator", "move_to": "brine-cup-tavern"}',
                          'A loose board. <update_hp target="Aria" amount="4" kind="damage"/>', " You limp in.")
    hp = (await lore_table.state()).characters["u1"].hp
    await lore_table.turn("I look around.", '{"answerer": "narrator", "move_to": null}', "Smoke and song.")
    assert hp < (await lore_table.state()).characters["u1"].max_hp
    [party_line] = [line for line in lore_table.model.requests[-1].context.splitlines() if line.startswith("- Aria,")]
    assert f"HP {hp}/" in party_line
