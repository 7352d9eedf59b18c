"""Conditions change the numbers (SRD 5.1): disadvantage attacking while poisoned or prone, advantage against the
restrained and the unconscious (a melee hit on them is critical), prone targets easier within 5 feet and harder
beyond, no action while incapacitated, STR and DEX saves that fail without a roll, and checks at a
disadvantage while poisoned or frightened; advantage and disadvantage cancel."""

from __future__ import annotations

import random

from engine.basics import AgentType
from engine.characters import make_character
from engine.rules import check, conditions
from tests.conftest import call, ctx_for


def test_advantage_and_disadvantage_come_from_both_sides_and_cancel():
    assert conditions.attack_mode(None, ["poisoned"], [], True) == ("disadvantage", "disadvantage: attacker poisoned")
    assert conditions.attack_mode(None, [], ["restrained"], False) == ("advantage", "advantage: target restrained")
    assert conditions.attack_mode(None, [], ["prone"], True)[0] == "advantage"  # within 5 feet
    assert conditions.attack_mode(None, [], ["prone"], False)[0] == "disadvantage"  # from afar
    mode, why = conditions.attack_mode(None, ["poisoned"], ["stunned"], True)
    assert mode is None and why.endswith("(they cancel)")
    assert conditions.attack_mode("advantage", ["invisible"], [], True) == ("advantage", "advantage: attacker invisible")
    assert conditions.melee_crit(["unconscious"]) and not conditions.melee_crit(["prone"])
    assert conditions.cannot_act(["stunned"]) == "stunned" and conditions.cannot_act(["prone", "poisoned"]) is None


def test_a_characters_checks_and_saves_follow_their_conditions():
    aria = make_character("u", "Aria", "fighter")
    aria.conditions = ["poisoned"]
    rolled = check(aria, "athletics", random.Random(1))
    assert rolled.roll.expression.endswith(" dis") and "(disadvantage: poisoned)" in rolled.label
    assert not check(aria, "con", random.Random(1), save=True).roll.expression.endswith(" dis")  # saves: no
    aria.conditions = ["paralyzed"]
    frozen = check(aria, "dex", random.Random(1), save=True)
    assert frozen.outcome(5) == "Dexterity saving throw (fails: paralyzed) no roll (paralyzed) → 0 (an automatic failure) vs DC 5: failure"
    assert check(aria, "wis", random.Random(1), save=True).roll.total > 0  # a WIS save is rolled
    aria.conditions = ["restrained"]
    assert check(aria, "dex", random.Random(1), save=True).roll.expression.endswith(" dis")


def test_attacks_by_and_on_the_conditioned(state):
    ctx = ctx_for(state)
    aria = state.characters["u1"]
    aria.conditions = ["poisoned"]
    swung = call(ctx, '<attack attacker="Aria" target="Ysolde Marrick" weapon="longsword"/>')
    assert swung.ok and " dis → " in swung.observation and "(disadvantage: attacker poisoned)" in swung.observation
    aria = state.characters["u1"]
    aria.conditions = ["stunned"]
    stopped = call(ctx, '<attack attacker="Aria" target="Ysolde Marrick" weapon="longsword"/>')
    assert not stopped.ok and "Aria is stunned and cannot attack" in stopped.observation
    state.characters["u1"].conditions = []
    state.npcs["ysolde-marrick"].conditions = ["unconscious"]
    for seed in range(40):  # the first hit on the sleeping harbormaster
        trial = state.model_copy(deep=True)
        hit = call(ctx_for(trial, seed=seed), '<attack attacker="Aria" target="Ysolde Marrick" weapon="longsword"/>')
        if "miss" not in hit.observation:
            assert "adv → " in hit.observation and "critical hit" in hit.observation and "2d8" in hit.observation
            break
    else:
        raise AssertionError("no hit in 40 seeds")
    state.npcs["ysolde-marrick"].conditions = ["paralyzed"]
    wizard = state.characters["u2"]
    wizard.spells = ["Burning Hands"]
    burned = call(ctx_for(state, actor="u2"), '<cast_spell caster="Bram" spell="Burning Hands" target="Ysolde Marrick"/>')
    assert burned.ok and "Ysolde Marrick: no roll (paralyzed) → 0, failure" in burned.observation


def test_a_creature_attacks_by_its_conditions_too(state):
    ctx = ctx_for(state)
    assert call(ctx, '<start_combat>{"enemy": [{"name": "Crab", "hp": 9, "ac": 11}]}</start_combat>').ok
    crab = next(p for p in state.combat.order if p.name == "Crab")
    crab.conditions = ["prone"]
    state.characters["u1"].conditions = ["restrained"]
    cctx = ctx_for(state, agent=AgentType.COMBAT)
    pinched = call(cctx, '<attack attacker="Crab" target="Aria" bonus="3" damage="1d4+1"/>')
    assert pinched.ok and "(advantage: target restrained; disadvantage: attacker prone (they cancel))" in pinched.observation
    next(p for p in state.combat.order if p.name == "Crab").conditions = ["paralyzed"]
    refused = call(cctx, '<attack attacker="Crab" target="Aria" bonus="3" damage="1d4+1"/>')
    assert not refused.ok and "Crab is paralyzed and cannot attack" in refused.observation
