"""Damage by type (SRD 5.1): resistance halves, immunity stops, vulnerability doubles; a tiefling resists fire, a
hill dwarf poison; a creature by its stat block's defences, in every way damage is dealt."""

from __future__ import annotations

from engine.basics import AgentType
from engine.characters import make_character
from engine.entities import EnemyTemplate
from tests.conftest import call, ctx_for, turn_of


def test_a_tiefling_resists_fire_and_a_dwarf_poison(state):
    state.characters["u1"] = make_character("u1", "Zara", "fighter", species="tiefling")
    state.characters["u2"] = make_character("u2", "Durin", "wizard", species="dwarf")
    ctx = ctx_for(state)
    burned = call(ctx, '<update_hp target="Zara" amount="9" damage_type="fire"/>')
    assert burned.ok and burned.observation.startswith("Zara takes 4 damage (resists fire: 9 halved)")
    assert state.characters["u1"].hp == state.characters["u1"].max_hp - 4
    cut = call(ctx, '<update_hp target="Zara" amount="3" damage_type="slashing"/>')
    assert cut.observation.startswith("Zara takes 3 damage:")
    poisoned = call(ctx, '<update_hp target="Durin" amount="5" damage_type="poison"/>')
    assert poisoned.observation.startswith("Durin takes 2 damage (resists poison: 5 halved)")
    plain = call(ctx, '<update_hp target="Zara" amount="2"/>')  # no type given: as it is
    assert plain.observation.startswith("Zara takes 2 damage:")


def test_a_creatures_defences_from_its_stat_block(state):
    ctx = ctx_for(state)
    skeleton = EnemyTemplate(name="Skeleton", hp=13, ac=13, defences={"immunities": ["poison"],
                                                                       "vulnerabilities": ["bludgeoning"]})
    wraith = EnemyTemplate(name="Shade", hp=20, ac=12, defences={"resistances": ["slashing"]})
    body = {"enemy": [skeleton.model_dump(exclude_none=True), wraith.model_dump(exclude_none=True)]}
    import json

    assert call(ctx, f"<start_combat>{json.dumps(body)}</start_combat>").ok
    cctx = ctx_for(state, agent=AgentType.COMBAT)
    cudgel = call(cctx, '<update_hp target="Skeleton" amount="4" damage_type="bludgeoning"/>')
    assert cudgel.observation.startswith("Skeleton takes 8 damage (vulnerable to bludgeoning: 4 doubled)")
    venom = call(cctx, '<update_hp target="Skeleton" amount="4" damage_type="poison"/>')
    assert venom.observation.startswith("Skeleton takes 0 damage (immune to poison)")
    for seed in range(40):  # Aria's longsword (slashing) on the shade: halved
        trial = turn_of(state.model_copy(deep=True), "Aria")
        swung = call(ctx_for(trial, seed=seed), '<attack attacker="Aria" target="Shade" weapon="longsword"/>')
        if "miss" not in swung.observation:
            assert "(resists slashing:" in swung.observation and "halved)" in swung.observation
            break
    else:
        raise AssertionError("no hit in 40 seeds")


def test_spell_damage_meets_resistance_too(state):
    state.characters["u1"] = make_character("u1", "Zara", "fighter", species="tiefling")
    wizard = state.characters["u2"]
    wizard.spells = ["Burning Hands"]
    burned = call(ctx_for(state, actor="u2"), '<cast_spell caster="Bram" spell="Burning Hands" target="Zara"/>')
    assert burned.ok and "(resists fire:" in burned.observation
