"""Choices a class makes (engine/rules/choices.py): Expertise (a rogue's and a bard's doubled proficiency) and the
Fighting Style (a fighter's, a paladin's, a ranger's), chosen at creation or the class's usual ones, each changing the
numbers the SRD says."""

from __future__ import annotations

import random

import pytest

from engine.basics import Item
from engine.characters import make_character
from engine.errors import BadInput
from engine.rules import check, proficiency_bonus, proficiencies
from engine.rules.attacks import profile
from engine.rules.choices import expertise_count, style_of
from engine.rules.checks import expertise, skills_of
from engine.rules.data import weapon
from engine.rules.equipment import armor_class
from tests.conftest import CHANNEL


def test_expertise_doubles_the_proficiency_of_the_skills_chosen_or_the_first_ones():
    rogue = make_character("u", "Pip", "rogue", 1, expertise=["stealth", "perception"])
    assert expertise(rogue) == ["stealth", "perception"]
    sneak = check(rogue, "stealth", random.Random(1))
    assert "(expertise)" in sneak.label and sneak.modifier == rogue.abilities.mod("dexterity") + 2 * proficiency_bonus(1)
    assert "Stealth (expertise)" in proficiencies(rogue)
    usual = make_character("u", "Pip", "rogue", 1)
    assert expertise(usual) == list(skills_of(usual))[:2]  # none chosen: the first two it is proficient in
    assert [expertise_count("rogue", n) for n in (1, 6)] == [2, 4] and [expertise_count("bard", n) for n in (2, 3, 10)] == [0, 2, 4]
    assert expertise(make_character("u", "Pip", "rogue", 6)) and len(expertise(make_character("u", "Pip", "rogue", 6))) == 4


def test_choices_the_class_does_not_offer_are_refused_with_what_it_does():
    with pytest.raises(BadInput, match="Expertise needs a skill you are proficient in; not arcana"):
        make_character("u", "Pip", "rogue", 1, expertise=["arcana", "stealth"])
    with pytest.raises(BadInput, match="Expertise in 2 different skills"):
        make_character("u", "Pip", "rogue", 1, expertise=["stealth", "stealth"])
    with pytest.raises(BadInput, match="A level-1 fighter has no Expertise"):
        make_character("u", "Aria", "fighter", 1, expertise=["athletics"])
    with pytest.raises(BadInput, match="A level-1 ranger has no Fighting Style"):
        make_character("u", "Rook", "ranger", 1, style="archery")
    with pytest.raises(BadInput, match="A paladin's fighting styles: defense, dueling, great weapon fighting, protection"):
        make_character("u", "Sera", "paladin", 2, style="archery")
    assert make_character("u", "Aria", "fighter", 1, style="Great-Weapon Fighting").fighting_style == "great weapon fighting"


def test_each_fighting_style_changes_its_number():
    defended = make_character("u", "Aria", "fighter", 1)  # defense by default: chain mail 16 + 1 + shield 2
    assert style_of(defended) == "defense" and armor_class(defended).value == 19
    archer = make_character("u", "Rook", "ranger", 2)
    bow = profile(archer, weapon("longbow"))
    assert style_of(archer) == "archery" and bow.bonus == archer.abilities.mod("dexterity") + 2 + 2
    duelist = make_character("u", "Sera", "paladin", 2, style="dueling")  # a longsword beside a shield: one hand
    sword = profile(duelist, weapon("longsword"))
    assert sword.damage == f"1d8+{duelist.abilities.mod('strength') + 2}"
    brute = make_character("u", "Korr", "fighter", 1, style="great weapon fighting")
    brute.inventory = [Item(name="greatsword")]
    assert profile(brute, weapon("greatsword")).damage.startswith("2d6ro<3+")
    assert style_of(make_character("u", "Rook", "ranger", 1)) is None


async def test_create_takes_the_choices_and_refuses_a_bad_one(table):
    ch, _ = await table.engine.create_character_scored(CHANNEL, "u3", "Pip", "rogue", expertise=["stealth", "acrobatics"])
    assert ch.expertise == ["stealth", "acrobatics"]
    with pytest.raises(BadInput, match="fighting styles"):
        await table.engine.create_character_scored(CHANNEL, "u4", "Sera", "fighter", style="flying")
    ranger, _ = await table.engine.create_character_scored(CHANNEL, "u4", "Rook", "ranger", level=1)
    assert ranger.fighting_style is None
