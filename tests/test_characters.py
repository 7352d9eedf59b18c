"""Characters by the SRD: the data loads and is complete, species and backgrounds shape a new character, armour
class comes from the armour carried, hit points follow the level, and old saved characters still load."""

from __future__ import annotations

import random
import re

import pytest

from engine import BadInput
from engine.characters import CLASSES, make_character
from engine.dice import roll
from engine.rules import CLASS_SAVES, CLASS_SKILLS, SKILLS, origins
from engine.rules.data import DICE, rules, weapon
from engine.rules.equipment import armor_class, carried_weapons, proficient
from engine.rules.levels import max_hit_points
from engine.basics import Item
from engine.state import Character

SRD_SPECIES = {"dwarf", "elf", "halfling", "human", "dragonborn", "gnome", "half-elf", "half-orc", "tiefling"}


def test_the_data_loads_and_every_class_is_complete():
    data = rules()
    assert set(data.species) == SRD_SPECIES and set(data.classes) == set(CLASS_SAVES)
    assert "acolyte" in data.backgrounds and len(data.backgrounds) >= 5
    for cls in data.classes.values():
        assert cls.equipment and cls.saves == list(CLASS_SAVES[cls.name])
        assert cls.skill_choices[: cls.skills] == list(CLASS_SKILLS[cls.name])  # the usual picks, as before
        levels = {f.level for f in cls.features}
        assert 1 in levels and {4, 8, 12, 16, 19} <= levels and max(levels) == 20, cls.name
        assert all(f.name and f.text for f in cls.features)
        kit = [weapon(i.name) for i in cls.equipment]
        assert any(kit), cls.name  # everyone starts with a weapon, and with ammunition for a bow or crossbow
        assert all(w.ammunition in {i.name for i in cls.equipment} for w in kit if w is not None and w.ammunition)
    for w in data.weapons.values():
        assert DICE.match(w.damage) and roll(w.damage, random.Random(1)).total >= 1
        assert (w.range is not None) == (w.has("thrown") or w.has("ammunition"))
    for bg in data.backgrounds.values():
        assert len(bg.skills) == 2 and set(bg.skills) <= set(SKILLS) and bg.equipment and bg.feature.text
    for sp in data.species.values():
        assert sp.speed in (25, 30) and sp.abilities and sp.traits and "Common" in sp.languages


def test_a_species_raises_scores_and_grants_what_the_srd_gives():
    dwarf = make_character("u", "Tor", "cleric", species="Hill Dwarf", background="acolyte")
    plain = make_character("u", "Tor", "cleric", species="human")
    assert dwarf.species == "dwarf" and dwarf.background == "acolyte"
    assert (dwarf.abilities.constitution, dwarf.abilities.wisdom) == (14 + 2, 15 + 1)  # the array, then +2 CON +1 WIS
    assert plain.abilities.wisdom == 16 and plain.abilities.intelligence == 9  # human: +1 to every score
    assert dwarf.max_hp == 8 + 3 + 1  # d8 maximum, CON +3, and dwarven toughness
    assert origins.speed(dwarf) == 25 and "Dwarvish" in origins.languages(dwarf)
    assert {"Darkvision", "Dwarven Resilience", "Shelter of the Faithful"} <= {t.name for t in origins.traits(dwarf)}
    assert proficient(dwarf, rules().weapons["battleaxe"]) and not proficient(plain, rules().weapons["battleaxe"])
    elf = make_character("u", "Ilva", "wizard", species="elf")
    assert "perception" in elf.skills and elf.abilities.dexterity == 13 + 2
    half_elf = make_character("u", "Ren", "bard", species="half elf")
    assert half_elf.abilities.charisma == 17 and half_elf.abilities.dexterity == 15 and half_elf.abilities.constitution == 14
    assert len(half_elf.skills) == 3 + 2 + 2  # class, background, and two of the half-elf's choosing
    capped = make_character("u", "Max", "fighter", abilities=make_character("u", "x", "fighter").abilities.model_copy(
        update={"strength": 20}), species="half-orc")
    assert capped.abilities.strength == 20  # no score passes 20


def test_a_background_adds_skills_gear_and_coin_and_duplicates_are_replaced():
    rogue = make_character("u", "Vex", "rogue")  # the alley runner grants sleight of hand and stealth
    assert rogue.background == "alley runner" and rogue.species == "human"
    assert rogue.skills == ["perception", "deception", "acrobatics", "investigation", "sleight of hand", "stealth"]
    assert len(set(rogue.skills)) == len(rogue.skills)
    assert rogue.item("thieves' tools") and rogue.item("map of the home city") and rogue.item("dagger").quantity == 2
    scholar = make_character("u", "Vex", "rogue", background="Scholar")
    assert {"arcana", "history"} <= set(scholar.skills) and "stealth" in scholar.skills
    assert make_character("u", "Bo", "cleric").currency.gp == 15  # the acolyte's purse
    with pytest.raises(BadInput, match="'elfish' is not a species I know. Did you mean elf?"):
        make_character("u", "Bo", "wizard", species="elfish")
    with pytest.raises(BadInput, match="'sage' is not a background I know.* Choose one of: acolyte"):
        make_character("u", "Bo", "wizard", background="sage")


def test_armour_class_comes_from_the_armour_carried():
    fighter = make_character("u", "Aria", "fighter")
    worn = armor_class(fighter)
    assert (fighter.ac, worn.describe()) == (19, "19 (chain mail, defense style, shield)")  # 16 + Defense 1 + shield 2; heavy armour: no DEX
    rogue = make_character("u", "Vex", "rogue")
    assert armor_class(rogue).describe() == f"{11 + rogue.abilities.mod('dexterity')} (leather armor)"
    ranger = make_character("u", "Lyr", "ranger")  # DEX 16: scale mail caps the bonus at +2
    assert armor_class(ranger).describe() == "16 (scale mail)"
    barbarian = make_character("u", "Grok", "barbarian")
    assert armor_class(barbarian).describe() == "14 (unarmoured defence)"  # 10 + DEX 2 + CON 2
    monk = make_character("u", "Ko", "monk")
    assert armor_class(monk).value == 10 + 3 + 2
    monk.inventory.append(Item(name="shield"))  # a shield undoes the monk's unarmoured defence: the better counts
    assert armor_class(monk).describe() == "15 (unarmoured defence)"  # a tie: 10 + DEX 3 + shield 2 is no better
    monk.abilities.wisdom = 8
    assert armor_class(monk).describe() == "15 (shield)"
    wizard = make_character("u", "Bram", "wizard")
    assert armor_class(wizard).describe() == "12 (no armour)"
    wizard.inventory.append(Item(name="Leather Armour"))  # spelling and case do not matter
    assert armor_class(wizard).describe() == "13 (leather armor)"
    assert make_character("u", "Sy", "sorcerer").ac == 13 + 2  # draconic resilience


def test_hit_points_by_level():
    assert max_hit_points(10, 2, 1) == 12 and max_hit_points(10, 2, 2) == 12 + 8 and max_hit_points(10, 2, 5) == 12 + 4 * 8
    assert max_hit_points(6, -3, 3) == 3 + 2 * 1  # at least one hit point a level
    fighter = make_character("u", "Aria", "fighter", level=3)  # CON 15 (+2): 12, then 6 + 2 twice
    assert fighter.max_hp == fighter.hp == 12 + 2 * 8 and fighter.hit_dice == 3
    sorcerer = make_character("u", "Sy", "sorcerer", level=2)  # CON 15: 6 + 2 + 1, then 4 + 2 + 1
    assert sorcerer.max_hp == 9 + 7


def test_characters_saved_before_species_still_load_and_read_as_before():
    old = {"owner_id": "u1", "name": "Old", "char_class": "fighter", "level": 2, "hp": 20, "max_hp": 20, "ac": 16,
           "abilities": {"strength": 15, "dexterity": 13}, "hit_die": 10, "hit_dice": 2,
           "inventory": [{"name": "longsword"}, {"name": "shield"}, {"name": "chain mail"}]}
    ch = Character.model_validate(old)
    assert ch.species is None and ch.background is None and origins.speed(ch) == 30 and origins.languages(ch) == []
    assert armor_class(ch).describe() == "19 (chain mail, defense style, shield)"
    assert [w.name for w in carried_weapons(ch)] == ["longsword"] and origins.origin(ch) == "fighter"


def test_every_class_can_be_made_with_every_species_and_background():
    for cls in CLASSES:
        for sp in SRD_SPECIES:
            ch = make_character("u", "Test", cls, species=sp, level=5)
            assert ch.max_hp > 5 and ch.ac >= 10 and len(set(ch.skills)) == len(ch.skills)
            assert all(1 <= getattr(ch.abilities, a) <= 20 for a in type(ch.abilities).model_fields)
    for bg in rules().backgrounds:
        assert re.fullmatch(r"[a-z ]+", bg) and make_character("u", "Test", "bard", background=bg).background == bg


@pytest.mark.parametrize("name", ["\u200b", "Ar\u200bia", "\u202eairA", "Ari\x00a", "Aria\x1b[2J", "\ufeffAria"])
def test_a_name_with_invisible_characters_is_refused(name):
    with pytest.raises(BadInput, match="cannot hold invisible characters"):
        make_character("u1", name, "fighter")


def test_names_in_any_script_and_with_emoji_are_fine():
    for name in ("Aria", "Ærwyn Ó'Brien", "Сергей", "李白", "Zoë 🐉", "Mom 👩‍👧"):
        assert make_character("u1", name, "fighter").name == name
