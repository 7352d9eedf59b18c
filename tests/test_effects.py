"""Spells that change the numbers while they last (engine/rules/effects.py): Bless and Bane on attacks and saves,
Shield, Shield of Faith, Haste, Mage Armor and Barkskin on AC, Faerie Fire and Blur on attacks against, Hunter's Mark,
Divine Favor and Branding Smite on weapon hits, Hold Person's paralysis with its repeated save; and how they end (time
counted in a fight, concentration broken, a fight's end, rests)."""

from __future__ import annotations

import random
import re

from engine.basics import Abilities
from engine.characters import make_character
from engine.dice import roll
from engine.rules import check, effects
from engine.rules.checks import creature_save_roll
from engine.rules.spells import find_spell
from engine.state import Character, GameState
from engine.tools.attacks import weapon_attack
from engine.tools.spells import cast
from tests.conftest import call, ctx_for, new_state, turn_of


def caster(state: GameState, owner: str, name: str, cls: str, level: int, spells: list[str]) -> Character:
    ch = make_character(owner, name, cls, level).model_copy(update={"spells": spells})
    state.characters[owner] = ch
    state.party.player_ids.append(owner)
    return ch


def fight(state: GameState, *enemies: tuple[str, int, int], **extra) -> None:
    body = ", ".join(f'{{"name": "{n}", "hp": {hp}, "ac": {ac}}}' for n, hp, ac in enemies)
    assert call(ctx_for(state), f'<start_combat>{{"enemy": [{body}]}}</start_combat>').ok


def foe(state: GameState, name: str):
    return next(p for p in state.combat.order if p.name == name)


def effect(spell: str, caster_name: str, **grant):
    s = find_spell(spell)
    return effects.make(s.name, caster_name, s.duration, s.concentration, s.grants.model_copy(update=grant))


def cleric_facing_a_bandit(spell: str):
    """A maker of fresh games: Iri, a 3rd-level cleric who knows `spell`, on her turn in a fight with a bandit."""
    def game() -> GameState:
        state = new_state()
        caster(state, "u3", "Iri", "cleric", 3, [spell])
        fight(state, ("Bandit", 11, 12))
        return turn_of(state, "Iri")

    return game


def cast_until(make_state, who: str, spell: str, target: str, wanted: str):
    """Cast on fresh games with one seed after another until the text shows `wanted` (a failed save, say)."""
    for seed in range(200):
        state = make_state()
        told = cast(ctx_for(state, actor=state.find_character(who).owner_id, seed=seed), state.find_character(who),
                    spell, target, None, None, confirmed=True)
        if wanted in told:
            return state, told
    raise AssertionError(f"no seed gave {wanted!r}")


def test_every_granting_spell_is_read_with_a_duration_and_says_what_it_does():
    for name, minutes in (("Bless", 1), ("Shield", 0), ("Mage Armor", 480), ("Hunter's Mark", 60),
                          ("Shield of Faith", 10), ("Hold Person", 1)):
        spell = find_spell(name)
        assert spell.grants is not None and effects.minutes(spell.duration) == minutes, name
    assert effects.describe(effect("Bless", "Iri")) == "Bless (+1d4 to attacks and saves; Iri's, concentration)"
    assert effects.describe(effect("Bane", "Iri")) == "Bane (-1d4 to attacks and saves; Iri's, concentration)"
    hasted = effects.describe(effect("Haste", "Bram"))
    assert hasted == "Haste (advantage on DEX saves; AC +2; speed doubled; Bram's, concentration)"
    marked = effects.make("Hunter's Mark", "Rook", "up to 1 hour", True, find_spell("Hunter's Mark").grants,
                          mark="Goblin 1")
    assert effects.describe(marked) == "Hunter's Mark (+1d6 on hits on Goblin 1; Rook's, concentration)"


def test_a_d20_with_spell_dice_added_still_crits_and_fumbles():
    rolled = [roll("1d20+5+1d4", random.Random(s)) for s in range(200)]
    assert {r.natural for r in rolled} == set(range(1, 21))
    assert all(r.natural is not None and r.total - 5 - r.natural in range(1, 5) for r in rolled)
    assert roll("1d20+1d20", random.Random(1)).natural is None


def test_bless_adds_a_d4_to_attacks_and_saves_and_a_second_casting_replaces_the_first():
    state = new_state()
    cleric = caster(state, "u3", "Iri", "cleric", 3, ["Bless"])
    told = cast(ctx_for(state, actor="u3"), cleric, "bless", "Aria, Bram", None, None)
    assert "Aria: Bless (+1d4 to attacks and saves; Iri's, concentration)." in told
    aria = state.characters["u1"]
    assert [e.spell for e in aria.effects] == ["Bless"] and not cleric.effects
    fight(state, ("Goblin 1", 7, 15))
    swung = weapon_attack(ctx_for(turn_of(state, "Aria"), "combat"), aria, "longsword", "Goblin 1")
    assert re.search(r"1d20\+5\+1d4 → \d+ \(Bless \+1d4\) vs AC 15", swung), swung
    saved = check(aria, "wisdom", random.Random(2), save=True)
    assert saved.roll.expression.endswith("+1d4") and "Bless +1d4" in saved.label
    assert "+1d4" not in check(aria, "perception", random.Random(2)).roll.expression  # checks are not saves
    cast(ctx_for(turn_of(state, "Iri"), actor="u3"), cleric, "bless", "Aria", None, None)  # again: no stacking
    assert [e.spell for e in aria.effects] == ["Bless"] and not state.characters["u2"].effects


def test_bane_on_a_failed_save_takes_a_d4_from_a_creatures_attacks_and_saves():
    game = cleric_facing_a_bandit("Bane")
    state, told = cast_until(game, "Iri", "bane", "Bandit", "failure")
    bandit = foe(state, "Bandit")
    assert [e.spell for e in bandit.effects] == ["Bane"]
    assert creature_save_roll(bandit, "wisdom", random.Random(1)).expression == "1d20-1d4"
    hit = call(ctx_for(turn_of(state, "Bandit"), "combat"), '<attack attacker="Bandit" target="Aria" weapon="scimitar" bonus="3" '
                                        'damage="1d6+1"/>').observation
    assert re.search(r"1d20\+3-1d4 → -?\d+ \(Bane -1d4\) vs AC", hit), hit
    state2, told2 = cast_until(game, "Iri", "bane", "Bandit", "success")
    assert not foe(state2, "Bandit").effects  # a save shrugs it off


def test_shield_and_shield_of_faith_and_haste_raise_ac_and_mage_armor_and_barkskin_set_it():
    state = new_state()
    wizard = state.characters["u2"]  # Bram: no armour, DEX +2 (the standard array as a wizard takes it)
    plain = effects.target_ac(wizard)[0]
    wizard.effects.append(effect("Mage Armor", "Bram"))
    assert effects.target_ac(wizard) == (13 + wizard.abilities.mod("dexterity"), "Mage Armor")
    wizard.effects.append(effect("Shield", "Bram"))
    assert effects.target_ac(wizard) == (18 + wizard.abilities.mod("dexterity"), "Mage Armor, Shield +5")
    aria = state.characters["u1"]  # chain mail: Mage Armor does nothing for her
    worn = aria.ac
    aria.effects.append(effect("Mage Armor", "Bram"))
    assert effects.target_ac(aria) == (worn, "")
    aria.effects += [effect("Shield of Faith", "Iri"), effect("Haste", "Zed")]  # casters who are no one's sheet
    assert effects.target_ac(aria) == (worn + 4, "Shield of Faith +2, Haste +2")
    druid_friend = make_character("u9", "Oak", "druid", 3).model_copy(update={"effects": [effect("Barkskin", "Oak")]})
    assert effects.target_ac(druid_friend)[0] == max(16, druid_friend.ac)
    assert plain < effects.target_ac(wizard)[0]
    fight(state, ("Goblin 1", 7, 15))
    swung = call(ctx_for(state, "combat"), '<attack attacker="Goblin 1" target="Bram" weapon="scimitar" bonus="4" '
                                           'damage="1d6+2"/>').observation
    assert f"vs AC {18 + wizard.abilities.mod('dexterity')} (Mage Armor, Shield +5)" in swung
    hasted = check(aria, "dexterity", random.Random(3), save=True)
    assert hasted.roll.expression.endswith(" adv") and "advantage: Haste" in hasted.label


def test_faerie_fire_gives_advantage_and_blur_disadvantage_to_attacks_against_the_holder():
    state = new_state()
    fight(state, ("Goblin 1", 7, 15))
    goblin = foe(state, "Goblin 1")
    goblin.effects.append(effect("Faerie Fire", "Bram"))
    swung = weapon_attack(ctx_for(turn_of(state, "Aria"), "combat"), state.characters["u1"], "longsword", "Goblin 1")
    assert "adv" in swung.split("→")[0] and "advantage: target Faerie Fire" in swung
    state.characters["u2"].effects.append(effect("Blur", "Bram"))
    state.characters["u2"].concentration = "Blur"
    hit = call(ctx_for(state, "combat"), '<attack attacker="Goblin 1" target="Bram" weapon="scimitar" bonus="4" '
                                         'damage="1d6+2"/>').observation
    assert "dis →" in hit and "disadvantage: target Blur" in hit


def hits(state, name: str, weapon: str, target: str, *, seeds=range(300)) -> str:
    """A weapon attack that hits (and is no critical): the first seed that hits on a copy of the game, then played on
    the game itself with that seed (the same dice, so the same hit)."""
    turn_of(state, name)
    for seed in seeds:
        trial = GameState.model_validate(state.model_dump())
        if ", hit;" in weapon_attack(ctx_for(trial, "combat", seed=seed), trial.find_character(name), weapon, target):
            return weapon_attack(ctx_for(state, "combat", seed=seed), state.find_character(name), weapon, target)
    raise AssertionError("never hit")


def test_hunters_mark_adds_a_d6_of_the_weapons_type_to_hits_on_its_quarry_only():
    state = new_state()
    ranger = caster(state, "u3", "Rook", "ranger", 3, ["Hunter's Mark"])
    fight(state, ("Goblin 1", 30, 10), ("Goblin 2", 30, 10))
    told = cast(ctx_for(turn_of(state, "Rook"), actor="u3"), ranger, "hunter's mark", "Goblin 1", None, None)
    assert "Rook: Hunter's Mark (+1d6 on hits on Goblin 1; Rook's, concentration)." in told
    weapon = next(w for w in ("longbow", "shortsword", "longsword") if ranger.item(w))
    kind = {"longbow": "piercing", "shortsword": "piercing", "longsword": "slashing"}[weapon]
    marked = hits(state, "Rook", weapon, "Goblin 1")
    assert re.search(rf"damage 1d\d+\+\d → \d+ {kind} plus 1d6 → \d+ {kind} \(Hunter's Mark\)\.", marked), marked
    other = hits(state, "Rook", weapon, "Goblin 2")
    assert "Hunter's Mark" not in other


def test_divine_favor_on_every_weapon_hit_and_branding_smite_on_the_next_one_only():
    state = new_state()
    paladin = caster(state, "u3", "Sera", "paladin", 5, ["Divine Favor", "Branding Smite"])
    fight(state, ("Ogre", 200, 5))
    cast(ctx_for(turn_of(state, "Sera"), actor="u3"), paladin, "divine favor", None, None, None)
    weapon = next(w.name for w in paladin.inventory if w.name in ("longsword", "warhammer", "greatsword", "javelin"))
    first = hits(state, "Sera", weapon, "Ogre")
    assert "plus 1d4 → " in first and "radiant (Divine Favor)" in first
    cast(ctx_for(turn_of(state, "Sera"), actor="u3"), paladin, "branding smite", None, None, None)  # Divine Favor ends
    assert [e.spell for e in paladin.effects] == ["Branding Smite"] and paladin.concentration == "Branding Smite"
    smitten = hits(state, "Sera", weapon, "Ogre")
    assert "plus 2d6 → " in smitten and "radiant (Branding Smite)" in smitten
    assert "Branding Smite ends (its hit has landed) for Sera." in smitten
    assert not paladin.effects and paladin.concentration is None
    assert "Branding Smite" not in hits(state, "Sera", weapon, "Ogre")


def test_hold_person_paralyses_until_a_save_at_the_end_of_its_turn_or_until_concentration_breaks():
    game = cleric_facing_a_bandit("Hold Person")
    state, told = cast_until(game, "Iri", "hold person", "Bandit", "failure")
    bandit = foe(state, "Bandit")
    assert "paralyzed" in bandit.conditions and bandit.effects[0].repeat == "wisdom"
    assert bandit.effects[0].dc == 13  # 8 + proficiency 2 + WIS +3 (the cleric's standard array)
    swung = weapon_attack(ctx_for(turn_of(state, "Aria"), "combat"), state.characters["u1"], "longsword", "Bandit")
    assert "advantage: target paralyzed" in swung
    # Its turn ends: it saves again, until it succeeds.
    ctx = ctx_for(state, "combat", seed=5)
    for _ in range(40):
        while state.combat.current().name != "Bandit":
            call(ctx, "<next_turn/>")
        told = call(ctx, "<next_turn/>").observation
        assert "save against Hold Person" in told
        if "Hold Person ends for Bandit" in told:
            break
    assert "paralyzed" not in bandit.conditions and not bandit.effects
    # Held again, then the cleric is struck and drops: the hold goes with her concentration.
    state, _ = cast_until(game, "Iri", "hold person", "Bandit", "failure")
    iri = state.find_character("Iri")
    felled = call(ctx_for(state, "combat"), f'<update_hp target="Iri" amount="{iri.hp}"/>').observation
    assert "Hold Person ends (Iri's concentration is broken) for Bandit." in felled
    assert "paralyzed" not in foe(state, "Bandit").conditions


def test_a_failed_concentration_save_from_a_blow_ends_bless_on_everyone():
    for seed in range(100):
        state = new_state()
        cleric = caster(state, "u3", "Iri", "cleric", 3, ["Bless"])
        cleric.abilities = Abilities(constitution=1)  # CON -5: the DC 10 save mostly fails
        cast(ctx_for(state, actor="u3"), cleric, "bless", "Aria, Bram, Iri", None, None)
        told = call(ctx_for(state, seed=seed), '<update_hp target="Iri" amount="2"/>').observation
        if "it ends" in told:
            break
    assert "Bless ends (Iri's concentration is broken) for Aria, Bram, Iri." in told
    assert not any(c.effects for c in state.characters.values()) and cleric.concentration is None


def test_time_ends_effects_in_rounds_in_a_fight_at_its_end_and_at_rests():
    state = new_state()
    cleric = caster(state, "u3", "Iri", "cleric", 3, ["Bless", "Shield of Faith"])
    wizard = state.characters["u2"].model_copy(update={"level": 3, "spells": ["Shield", "Mage Armor"]})
    state.characters["u2"] = wizard
    fight(state, ("Goblin 1", 7, 15))
    ctx = ctx_for(state, "combat")
    cast(ctx_for(state, actor="u2"), wizard, "shield", None, None, None)  # a reaction: on anyone's turn
    cast(ctx_for(turn_of(state, "Iri"), actor="u3"), cleric, "bless", "Aria", None, None)
    assert wizard.effects[0].spell == "Shield" and wizard.effects[0].rounds == 1
    turns = []
    while state.characters["u1"].effects:  # Shield lasts until Bram's next turn; Bless ten of Iri's turns
        told = call(ctx, "<next_turn/>").observation
        turns.append(state.combat.current().name)
        if "Shield ends (its time is up) for Bram." in told:
            assert turns[-1] == "Bram" and turns.count("Bram") == 1 and not wizard.effects
    assert "Bram" in turns and not wizard.effects
    assert turns.count("Iri") == 10 and turns[-1] == "Iri" and "Bless ends (its time is up) for Aria." in told
    assert cleric.concentration is None
    cast(ctx_for(turn_of(state, "Iri"), actor="u3"), cleric, "bless", "Aria", None, None)
    over = call(ctx, "<end_combat/>").observation
    assert "Bless ends (the fight is over, and its time with it) for Aria" in over and cleric.concentration is None
    narrator = ctx_for(state, actor="u2")
    cast(narrator, wizard, "mage armor", None, None, None)
    cast(ctx_for(state, actor="u3"), cleric, "shield of faith", "Bram", None, None)
    rested = call(narrator, '<short_rest character="Bram"/>').observation
    assert "Shield of Faith ends (the rest outlasts it) for Bram." in rested
    assert [e.spell for e in wizard.effects] == ["Mage Armor"]  # eight hours outlast an hour's rest
    assert "Mage Armor ends" in call(narrator, '<long_rest character="Bram"/>').observation and not wizard.effects


def test_effects_are_kept_with_the_saved_game():
    state = new_state()
    state.characters["u1"].effects.append(effect("Bless", "Iri"))
    again = GameState.model_validate_json(state.model_dump_json())
    assert again.characters["u1"].effects == state.characters["u1"].effects


def test_the_sheet_and_the_tracker_show_the_spells_on_someone_and_the_ac_they_make():
    from engine.tools.character import ac_line, character_sheet
    from engine.tools.combat import tracker, tracker_rows

    state = new_state()
    cleric = caster(state, "u3", "Iri", "cleric", 3, ["Shield of Faith"])
    aria = state.characters["u1"]
    worn = aria.ac
    cast(ctx_for(state, actor="u3"), cleric, "shield of faith", "Aria", None, None)
    assert ac_line(aria).endswith(f"; {worn + 2} with Shield of Faith +2")
    assert "Spells on them: Shield of Faith (AC +2; Iri's, concentration)." in character_sheet(aria)
    state.characters["u2"].effects.append(effect("Longstrider", "Zed"))
    assert "speed 40 ft" in character_sheet(state.characters["u2"])  # 30 + 10
    fight(state, ("Goblin 1", 7, 15))
    row = next(r for r in tracker_rows(state) if r.who.name == "Aria")
    assert (row.ac, row.spells) == (worn + 2, ["Shield of Faith"])
    assert f"Aria [player] init {row.who.initiative}, AC {worn + 2}, HP" in tracker(state)
    assert "(Shield of Faith)" in tracker(state)
