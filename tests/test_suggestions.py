"""The pre-flight tool suggestor: which hints each message earns, for which agent."""

from __future__ import annotations

import pytest

from engine.state import AgentType, Participant
from engine.suggestions import RULES, format_suggestions, suggest
from tests.conftest import CHANNEL

N, C, P = AgentType.NARRATIVE, AgentType.COMBAT, AgentType.NPC


def tools(state, text, agent=N, npc=None):
    return [s.tool for s in suggest(state, text, agent, state.npcs.get(npc) if npc else None)]


@pytest.mark.parametrize("text,expected", [
    ("I drink my healing potion.", {"update_hp", "modify_inventory"}),
    ("We make camp and sleep.", {"long_rest"}),
    ("I sit to catch my breath.", {"short_rest"}),
    ("I try to climb the sea wall.", {"roll"}),
    ("I buy a rope from the chandler.", {"modify_inventory"}),
    ("I search the quay for anything hidden.", {"roll", "discover_secret"}),
])
def test_narrator_hints(state, text, expected):
    assert expected <= set(tools(state, text))


def test_plain_talk_earns_no_hints(state):
    assert tools(state, "What a grey morning it is.") == []


def test_travel_names_the_exit_and_says_when_it_is_shut(state):
    hint = suggest(state, "I walk into the Brine Cup.", N)[0]
    assert (hint.tool, hint.args, hint.confidence) == ("change_location", {"location": "brine-cup-tavern"}, 0.8)
    state.current_location = "saltmere-quay"
    shut = suggest(state, "We cross the causeway to Gannet Rock lighthouse.", N)
    assert shut[0].args == {"location": "gannet-rock-lighthouse"} and "not open yet" in shut[0].reason


def test_quest_acceptance_points_at_the_offered_quest(state):
    hint = next(s for s in suggest(state, "Yes, we'll do it.", N) if s.tool == "start_quest")
    assert hint.args == {"quest": "relight-the-lantern"}
    assert "start_quest" in tools(state, "I accept your offer.", P, npc="ysolde-marrick")
    assert "start_quest" not in tools(state, "I accept your offer.", P, npc="odile-farrow")  # not her quest


def test_npc_hints_use_only_npc_tools(state):
    found = tools(state, "Will you come with us? And tell me, what secret do you know?", P, npc="brisa-wendle")
    assert {"add_to_party", "discover_secret"} <= set(found)
    assert not {"start_combat", "update_hp", "next_turn"} & set(found)


def test_combat_hints(state):
    state.current_location = "wreckers-grotto"
    state.combat.active = True
    state.combat.order = [Participant(id="u1", name="Aria", faction="player", initiative=10, ac=18),
                          Participant(id="crab", name="Crab", faction="enemy", initiative=5, ac=11, hp=3, max_hp=3)]
    assert tools(state, "I stab the crab!", C)[:2] == ["next_turn", "attack"]  # the engine rolls the attack
    state.combat.order[1].hp = 0
    assert tools(state, "Is it over?", C)[0] == "end_combat"


def test_start_combat_names_the_encounter_here(state):
    state.current_location = "wreckers-grotto"
    hint = next(s for s in suggest(state, "We charge the smugglers!", N) if s.tool == "start_combat")
    assert hint.args == {"encounter": "wreckers-ambush"} and hint.confidence == 0.8


def test_a_broken_rule_costs_nothing(state, monkeypatch):
    def broken(situation):
        raise RuntimeError("bug")

    monkeypatch.setattr("engine.suggestions.RULES", [("broken", frozenset({N}), broken), *RULES])
    assert "long_rest" in tools(state, "We sleep.")


def test_format_is_empty_without_hints_and_lists_examples(state):
    assert format_suggestions([]) == ""
    text = format_suggestions(suggest(state, "I walk into the Brine Cup.", N))
    assert '<change_location location="brine-cup-tavern"/>' in text and "hints, not orders" in text


async def test_the_engine_puts_hints_in_context_and_remembers_them(table):
    await table.turn("I drink my healing potion.", "Gulp.")
    assert "update_hp (highly recommended)" in table.model.requests[-1].context
    assert [s.tool for s in table.engine.last_suggestions[CHANNEL]][:2] == ["update_hp", "modify_inventory"]
    cfg = table.engine.deps.config
    table.engine.deps.config = cfg.model_copy(update={"turn": cfg.turn.model_copy(update={"suggestions": False})})
    await table.turn("I drink another potion.", "Gulp.")
    assert "Tools that may fit" not in table.model.requests[-1].context and table.engine.last_suggestions[CHANNEL] == []
