"""Stat blocks: enemies and fighting NPCs attack with their own numbers, NPC foes fight on their own sheet, and
games stored before stat blocks existed still load."""

from __future__ import annotations

import random

from engine.context import game_context
from engine.basics import AgentType
from engine.state import GameState
from tests.conftest import call, ctx_for
from tests.test_tools import failing

COMBAT = AgentType.COMBAT


def wreckers_fight(state: GameState, seed: int = 1) -> None:
    state.current_location = "wreckers-grotto"
    assert call(ctx_for(state, seed=seed), '<start_combat encounter="wreckers-ambush"/>').ok


def test_an_encounter_npc_fights_on_its_own_sheet_with_its_dexterity_in_initiative(state):
    wreckers_fight(state, seed=4)
    rng = random.Random(4)  # the order start_combat draws in: the party, the templates, then NPC foes
    expected = {"Aria": rng.randint(1, 20) + state.characters["u1"].abilities.mod("dexterity"),
                "Bram": rng.randint(1, 20) + state.characters["u2"].abilities.mod("dexterity"),
                "Gray Oar Smuggler 1": rng.randint(1, 20) + 1, "Gray Oar Smuggler 2": rng.randint(1, 20) + 1,
                "Corran Vey": rng.randint(1, 20) + 2}
    assert {p.name: p.initiative for p in state.combat.order} == expected
    corran = next(p for p in state.combat.order if p.id == "corran-vey")
    assert corran.faction == "enemy" and corran.hp is None and corran.ac == 14
    smuggler = next(p for p in state.combat.order if p.name == "Gray Oar Smuggler 1")
    assert [a.name for a in smuggler.actions] == ["Rusty cutlass", "Light crossbow"]


def test_a_named_stat_block_attack_uses_its_numbers_not_the_agents(state):
    wreckers_fight(state)
    tag = '<attack attacker="Gray Oar Smuggler 1" target="Aria" weapon="cutlass" bonus="12" damage="6d10"/>'
    hits = 0
    for seed in range(30):
        copy = state.model_copy(deep=True)
        result = call(ctx_for(copy, agent=COMBAT, seed=seed), tag)
        assert result.ok and "with Rusty cutlass: 1d20+3 →" in result.observation, result.observation
        if ", hit;" in result.observation:
            hits += 1
            dealt = state.characters["u1"].hp - copy.characters["u1"].hp
            assert "damage 1d6+1 → " in result.observation and " slashing." in result.observation
            assert 2 <= dealt <= 7
    assert hits


def test_a_creature_with_no_weapon_named_uses_its_first_attack(state):
    wreckers_fight(state)
    result = call(ctx_for(state, agent=COMBAT), '<attack attacker="Corran Vey" target="Bram"/>')
    assert result.ok and "Corran Vey attacks Bram with Boarding axe: 1d20+4" in result.observation
    bow = call(ctx_for(state, agent=COMBAT), '<attack attacker="Corran" target="Bram" weapon="hand crossbow"/>')
    assert "with Hand crossbow: 1d20+4" in bow.observation


def test_attacks_outside_the_stat_block(state):
    wreckers_fight(state)
    cctx = ctx_for(state, agent=COMBAT)
    failing(cctx, '<attack attacker="Corran Vey" target="Bram" weapon="trident"/>', "no attack called 'trident'",
            "Boarding axe, Hand crossbow")
    thrown = call(cctx, '<attack attacker="Corran Vey" target="Bram" weapon="thrown bottle" bonus="2" damage="1d4"/>')
    assert thrown.ok and "with thrown bottle: 1d20+2" in thrown.observation  # improvised: the agent's numbers
    failing(cctx, '<attack attacker="Aria" target="Corran Vey" weapon="warhammer"/>', "Aria carries no warhammer")  # not on her sheet: the model's numbers never count


def test_the_combat_agent_sees_every_stat_block_attack(state):
    wreckers_fight(state)
    text = game_context(state, COMBAT, "u1")
    assert "Gray Oar Smuggler 1: Rusty cutlass +3 to hit, 5 ft., 1d6+1 slashing; Light crossbow +3 to hit" in text
    assert "Corran Vey: Boarding axe +4 to hit, 5 ft., 1d8+2 slashing" in text


def test_the_gm_plans_encounters_with_their_numbers_and_loot(state):
    state.current_location = "wreckers-grotto"
    text = game_context(state, AgentType.NARRATIVE, "u1")
    assert "2× Gray Oar Smuggler (AC 12, HP 11, CR 1/8: Rusty cutlass +3 to hit" in text
    assert "Corran Vey (corran-vey: AC 14, HP 22/22)" in text
    assert "Loot when won: 34 gp, 60 sp, 1 × silver locket, 1 × healing potion, 1 × iron grate key." in text


def test_a_game_stored_before_stat_blocks_shops_and_loot_still_loads(state):
    old = state.model_dump(mode="json")
    for key in ("items", "shops"):
        del old[key]
    for npc in old["npcs"].values():
        for key in ("speed", "abilities", "actions", "cr"):
            del npc[key]
    for enc in old["encounters"].values():
        for key in ("npcs", "loot", "looted"):
            del enc[key]
        for enemy in enc["enemies"]:
            for key in ("speed", "abilities", "actions", "cr"):
                del enemy[key]
    for loc in old["locations"].values():
        for secret in loc["secrets"]:
            for key in ("dc", "skill", "loot", "looted"):
                del secret[key]
        for exit_ in loc["exits"]:
            del exit_["dc"], exit_["skill"]
    loaded = GameState.model_validate(old)
    assert loaded.shops == {} and loaded.npcs["corran-vey"].actions == []
    assert loaded.encounters["wreckers-ambush"].loot is None and loaded.locations["tide-tunnel"].exits[1].dc is None
