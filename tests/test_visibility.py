"""What NPC agents may see and do, enforced by the tool layer and the context builder, not by the prompt."""

from __future__ import annotations

import re

import pytest

from engine.instructions import system_prompt
from engine.context import game_context
from engine.basics import AgentType
from engine.visibility import MAX_NOTE_CHARS, MAX_NOTES, Viewer, known_locations, recall
from tests.conftest import call, ctx_for
from tests.test_tools import failing

NPC = AgentType.NPC


def test_an_npc_looks_around_only_where_it_stands_and_sees_only_its_own_secrets(state):
    odile = ctx_for(state, agent=NPC, npc="odile-farrow")  # in the tavern; the party is on the quay
    failing(odile, '<get_location location="saltmere-quay"/>', "only look around where you are", "Brine")
    seen = call(odile, "<get_location/>")
    assert seen.ok and "cask-door" in seen.observation and "GM only" not in seen.observation
    ysolde = ctx_for(state, agent=NPC, npc="ysolde-marrick")
    look = call(ysolde, "<get_location/>")
    assert look.ok and "green-glimmer" in look.observation
    # A place it does not know is not there for it, and the refusal lists only places it knows.
    refused = failing(ysolde, '<get_location location="tide-tunnel"/>', "no location called")
    assert "tide-tunnel" not in refused.observation.split("(locations:")[1]
    assert "wreckers-grotto" not in refused.observation
    gm = call(ctx_for(state), '<get_location location="brine-cup-tavern"/>')
    assert gm.ok and "GM only" in gm.observation and "cask-door" in gm.observation  # the GM still sees all


def test_an_npc_changes_things_only_where_it_stands(state):
    odile = ctx_for(state, agent=NPC, npc="odile-farrow")
    state.npcs["odile-farrow"].location = "brine-cup-tavern"
    failing(odile, '<update_location_state location="saltmere-quay" flag="tide_out" value="true"/>', "only change things where you are")
    assert state.locations["saltmere-quay"].flags["tide_out"] is False
    assert call(odile, '<update_location_state flag="lamps_lit" value="true"/>').ok
    assert state.locations["brine-cup-tavern"].flags["lamps_lit"] is True
    # A place an NPC does not know is refused as unknown, before any "here" check could name it.
    failing(odile, '<update_location_state location="wreckers-grotto" flag="lantern_lit" value="false"/>', "no location called")
    assert state.locations["wreckers-grotto"].flags["lantern_lit"] is True


def test_an_npc_trades_only_with_the_player_talking_to_it(state):
    ysolde = ctx_for(state, agent=NPC, npc="ysolde-marrick", actor="u1")  # Aria (u1) is talking to her
    failing(ysolde, '<modify_inventory character="Bram" currency="gp" quantity="-10"/>', "only give to or take from Aria")
    assert state.characters["u2"].currency.gp == 10
    assert call(ysolde, '<modify_inventory character="Aria" currency="gp" quantity="-2"/>').ok
    assert call(ysolde, '<modify_inventory item="Lantern oil" quantity="1"/>').ok  # to Aria, by default
    assert state.characters["u1"].currency.gp == 8 and any(i.name == "Lantern oil" for i in state.characters["u1"].inventory)


def test_an_npc_changes_only_the_quests_it_gave(state):
    gm = ctx_for(state)
    assert call(gm, '<start_quest quest="relight-the-lantern"/>').ok
    assert call(gm, '<start_quest quest="keepers-rest"/>').ok
    odile = ctx_for(state, agent=NPC, npc="odile-farrow")
    failing(odile, '<complete_quest quest="relight-the-lantern"/>', "no quest called")  # not hers: not even known
    brisa = ctx_for(state, agent=NPC, npc="brisa-wendle")
    failing(brisa, '<fail_quest quest="relight-the-lantern"/>', "no quest called")
    log = call(brisa, "<get_quest_log/>")
    assert log.ok and "relight-the-lantern" not in log.observation
    assert call(brisa, '<fail_quest quest="keepers-rest"/>').ok
    assert state.quests["relight-the-lantern"].status == "active" and state.quests["keepers-rest"].status == "failed"


def test_an_npc_acts_only_on_itself(state):
    ysolde = ctx_for(state, agent=NPC, npc="ysolde-marrick")
    failing(ysolde, '<add_to_party npc="odile-farrow"/>', "only", "yourself")
    failing(ysolde, '<remove_from_party npc="brisa-wendle"/>', "only", "yourself")
    assert call(ysolde, '<add_to_party npc="ysolde-marrick"/>').ok


@pytest.mark.parametrize("npc_id", ["ysolde-marrick", "odile-farrow", "brisa-wendle", "aldous-wendle"])
def test_no_npc_prompt_names_a_place_or_secret_it_does_not_know(state, npc_id):
    npc = state.npcs[npc_id]
    text = system_prompt(NPC, npc) + "\n" + game_context(state, NPC, "u1", npc)
    known_places = {loc.id for loc in known_locations(state, Viewer(NPC, npc_id, "u1"))}
    for loc_id in set(state.locations) - known_places:
        assert not re.search(rf"\b{re.escape(loc_id)}\b", text), f"{npc_id}'s prompt names {loc_id}"
    secrets = {s.id for loc in state.locations.values() for s in loc.secrets}
    for secret in secrets - set(npc.knows_secrets):
        assert not re.search(rf"\b{re.escape(secret)}\b", text), f"{npc_id}'s prompt names {secret}"
    for flag in ("grate_unlocked", "lantern_lit", "tide_out"):  # the starter's real flags appear in no example
        assert flag not in system_prompt(NPC, npc)


def test_knowledge_is_kept_once_per_entity_and_bounded(state):
    gm = ctx_for(state)
    for ref in ("ysolde", "YSOLDE", "Ysolde Marrick", "ysolde-marrick"):
        assert call(gm, f'<get_npc npc="{ref}"/>').ok
    assert [k for k in state.knowledge if "ysolde" in k] == ["get_npc:ysolde-marrick|gm"]
    before = len(game_context(state, AgentType.NARRATIVE, "u1"))
    for ref in ("ysolde", "Ysolde Marrick"):
        call(gm, f'<get_npc npc="{ref}"/>')
    assert len(game_context(state, AgentType.NARRATIVE, "u1")) == before  # asking again adds nothing
    state.npcs["odile-farrow"].persona = "x" * 20_000
    call(gm, '<get_npc npc="odile-farrow"/>')
    assert all(len(v) <= MAX_NOTE_CHARS for v in state.knowledge.values())
    for i in range(MAX_NOTES + 10):
        state.knowledge[f"get_npc:filler-{i}|gm"] = "note"  # as if learnt over a long game
        call(gm, '<get_npc npc="brisa"/>')  # each learning trims to the bound
    assert len(state.knowledge) <= MAX_NOTES


def test_an_npc_sees_its_own_notes_and_no_one_elses(state):
    ysolde = ctx_for(state, agent=NPC, npc="ysolde-marrick")
    assert call(ysolde, '<get_npc npc="brisa-wendle"/>').ok
    assert call(ctx_for(state), '<get_npc npc="brisa-wendle"/>').ok
    mine = game_context(state, NPC, "u1", state.npcs["ysolde-marrick"])
    assert "Learned earlier" in mine and "Brisa Wendle" in mine and "keepers-log" not in mine
    odile = game_context(state, NPC, "u1", state.npcs["odile-farrow"])
    assert "Learned earlier" not in odile
    gm = game_context(state, AgentType.NARRATIVE, "u1")
    assert "Knows secrets: keepers-log" in gm  # the GM's note is its own, not replaced by the NPC's narrower one
    assert len(recall(state, Viewer(NPC, "ysolde-marrick"))) == 1
