"""SRD 5.1 details a table notices (issue #26 §1), each against the SRD's own numbers: heavy armour and DEX, the
Stealth disadvantage and Strength speed penalty of heavy armour, unarmed strikes, heavy weapons in Small hands,
a long rest at 0 hit points, and upcast text without phantom dice."""

from __future__ import annotations

import random

from engine.basics import Item
from engine.characters import make_character
from engine.rules import check
from engine.rules.attacks import find_weapon, profile
from engine.rules.equipment import armor_class
from engine.rules.origins import speed
from engine.rules.spells import scaled
from tests.conftest import call, ctx_for


def wearing(armour: str, cls: str = "fighter", species: str = "human", **scores: int):
    ch = make_character("u", "Tess", cls, species=species)
    ch.fighting_style = "dueling"  # not Defense: the armour's own AC is what these tests read
    ch.inventory = [Item(name=armour)]
    for ability, value in scores.items():
        setattr(ch.abilities, ability, value)
    return ch


def test_heavy_armour_takes_no_dex_either_way():
    assert armor_class(wearing("chain mail", dexterity=8)).value == 16  # SRD: 16, whatever the DEX
    assert armor_class(wearing("chain mail", dexterity=18)).value == 16
    assert armor_class(wearing("scale mail", dexterity=8)).value == 13  # medium: 14 + DEX (-1)
    assert armor_class(wearing("scale mail", dexterity=18)).value == 16  # medium: at most +2


def test_armour_that_clanks_gives_stealth_disadvantage():
    plate = wearing("chain mail")
    rolled = check(plate, "stealth", random.Random(1))
    assert rolled.roll.expression.endswith(" dis") and "disadvantage: chain mail" in rolled.label
    assert not check(plate, "stealth", random.Random(1), "advantage").roll.expression.endswith((" adv", " dis"))
    assert not check(wearing("leather armor"), "stealth", random.Random(1)).roll.expression.endswith(" dis")
    assert not check(plate, "dex", random.Random(1), save=True).roll.expression.endswith(" dis")


def test_heavy_armour_too_heavy_for_its_wearer_costs_ten_feet_but_not_a_dwarf():
    assert speed(wearing("plate armor", strength=14)) == 20  # plate needs STR 15
    assert speed(wearing("plate armor", strength=15)) == 30
    assert speed(wearing("chain mail", strength=12)) == 20  # chain mail needs 13
    assert speed(wearing("plate armor", species="dwarf", strength=10)) == 25  # a dwarf's 25 ft, unslowed


def test_unarmed_strikes_are_one_plus_strength_or_a_monks_martial_arts():
    fighter = make_character("u", "Aria", "fighter")  # STR 16 (+3)
    fist = profile(fighter, find_weapon(fighter, "unarmed"))
    assert (fist.bonus, fist.damage, fist.weapon.type, fist.proficient) == (5, "4", "bludgeoning", True)
    monk = make_character("u", "Ko", "monk", level=5)  # DEX 16 (+3) beats STR
    strike = profile(monk, find_weapon(monk, "fists"))
    assert (strike.ability, strike.damage) == ("dexterity", "1d6+3")  # Martial Arts d6 at level 5


def test_a_heavy_weapon_in_small_hands_attacks_with_disadvantage(state):
    halfling = make_character("u1", "Pip", "fighter", species="halfling")
    halfling.inventory.append(Item(name="greatsword"))
    state.characters["u1"] = halfling
    ctx = ctx_for(state)
    swung = call(ctx, '<attack attacker="Pip" target="Ysolde Marrick" weapon="greatsword"/>')
    assert swung.ok and " dis →" in swung.observation
    light = call(ctx, '<attack attacker="Pip" target="Ysolde Marrick" weapon="unarmed strike"/>')
    assert light.ok and " dis →" not in light.observation


def test_a_long_rest_does_nothing_at_zero_hit_points(state):
    ctx = ctx_for(state)
    for ch in state.characters.values():
        ch.hp = 0
    refused = call(ctx, "<long_rest/>")
    assert not refused.ok and "at 0 hit points" in refused.observation
    state.characters["u1"].hp = 1
    rested = call(ctx, "<long_rest/>")
    assert rested.ok and "Bram: no benefit at 0 HP" in rested.observation
    assert state.characters["u1"].hp == state.characters["u1"].max_hp and state.characters["u2"].hp == 0


def test_upcast_text_shows_the_real_dice():
    assert scaled("1d4+4", "5", 1) == "1d4+9"  # False Life at 2nd level: no "0d1"
    assert scaled("1d4+4", "5", 3) == "1d4+19"
    assert scaled("3d6", "1d6", 2) == "5d6" and scaled("1d6", "1d8", 2) == "1d6+2d8"


def test_area_spells_strike_everyone_named_in_their_area(state):
    from engine.rules.spells import AREA_TARGETS, find_spell

    for name in ("Burning Hands", "Fireball", "Thunderwave", "Shatter", "Call Lightning", "Moonbeam"):
        assert find_spell(name).area and find_spell(name).max_targets(None) == AREA_TARGETS, name
    state.characters["u2"].spells = ["Burning Hands"]
    ctx = ctx_for(state, actor="u2")
    assert call(ctx, '<start_combat>{"enemy": [{"name": "Crab", "hp": 30, "ac": 11, "count": 3}]}</start_combat>').ok
    cast = call(ctx, '<cast_spell caster="Bram" spell="Burning Hands" target="Crab 1, Crab 2, Crab 3"/>')
    assert cast.ok, cast.observation
    assert all(f"Crab {n}:" in cast.observation for n in (1, 2, 3))  # each saves: all three were in the cone


def test_acid_arrow_still_splashes_half_on_a_miss(state):
    from engine.characters import make_character as made

    wizard = made("u2", "Bram", "wizard", level=3)
    wizard.spells = ["Acid Arrow"]
    state.characters["u2"] = wizard
    for seed in range(40):  # the first seed whose arrow misses
        trial = state.model_copy(deep=True)
        ctx = ctx_for(trial, actor="u2", seed=seed)
        trial.npcs["ysolde-marrick"].ac = 19
        result = call(ctx, '<cast_spell caster="Bram" spell="Acid Arrow" target="Ysolde Marrick"/>')
        if result.ok and ", miss" in result.observation and "natural 1" not in result.observation:
            assert "but it splashes: half of" in result.observation
            assert trial.npcs["ysolde-marrick"].hp < trial.npcs["ysolde-marrick"].max_hp or " = 0 acid" in result.observation
            break
    else:
        raise AssertionError("no seed missed")


def test_no_spellcasting_in_armour_the_class_is_not_trained_in(state):
    wizard = state.characters["u2"]
    wizard.inventory.append(Item(name="chain mail"))
    ctx = ctx_for(state, actor="u2")
    refused = call(ctx, '<cast_spell caster="Bram" spell="Fire Bolt" target="Ysolde Marrick"/>')
    assert not refused.ok and "cannot cast spells wearing chain mail: a wizard is not trained in it" in refused.observation
    wizard = state.characters["u2"]  # a refused call puts the state back: the character as it was
    wizard.inventory = [i for i in wizard.inventory if i.name != "chain mail"] + [Item(name="shield")]
    refused = call(ctx, '<cast_spell caster="Bram" spell="Fire Bolt" target="Ysolde Marrick"/>')
    assert not refused.ok and "wearing a shield" in refused.observation
    cleric = make_character("u3", "Cass", "cleric")  # scale mail and a shield, and trained in both
    cleric.inventory.append(Item(name="chain mail"))  # heavy too: the Life domain
    state.characters["u3"] = cleric
    state.party.player_ids.append("u3")
    assert call(ctx_for(state, actor="u3"), '<cast_spell caster="Cass" spell="Sacred Flame" target="Ysolde Marrick"/>').ok


def test_a_halflings_luck_rerolls_a_natural_one():
    from engine.dice import roll

    pip = make_character("u", "Pip", "rogue", species="halfling")
    seed = next(s for s in range(500) if roll("1d20", random.Random(s)).natural == 1)  # the first die shows a 1
    lucky = check(pip, "stealth", random.Random(seed))
    assert "(Lucky: a 1 rolled again)" in lucky.roll.expression
    human = make_character("u", "Hal", "rogue")
    assert check(human, "stealth", random.Random(seed)).roll.natural == 1


def test_a_half_orc_endures_once_and_strikes_savagely():
    from engine.rules import life
    from engine.rules.attacks import swing

    grok = make_character("u", "Grok", "fighter", species="half-orc")
    assert "drops to 1 hit point instead (Relentless Endurance" in life.damage(grok, grok.hp + 3)
    assert grok.hp == 1 and grok.endured
    assert "falls unconscious" in life.damage(grok, 4)  # not twice before a long rest
    sword = profile(grok, find_weapon(grok, "longsword"))
    crit = next(swing(sword, random.Random(s), ac=10, savage=True) for s in range(500)
                if swing(sword, random.Random(s), ac=10).to_hit.natural == 20)
    assert crit.damage.expression.startswith("2d8+3+1d8")  # doubled dice, and one more


def test_a_long_rest_readies_relentless_endurance(state):
    grok = make_character("u1", "Grok", "fighter", species="half-orc")
    grok.endured, grok.hp = True, 5
    state.characters["u1"] = grok
    assert call(ctx_for(state), '<long_rest character="Grok"/>').ok and not state.characters["u1"].endured
