"""5e checks and saving throws (SRD 5.1, CC-BY-4.0): which ability each skill uses, the saves and skills each class
is proficient in, the proficiency bonus by level, and the roll that follows from a character's sheet."""

from __future__ import annotations

import difflib
import random
from dataclasses import dataclass
from typing import Literal

from ..dice import Roll, roll
from ..errors import BadInput
from ..basics import ABILITIES, SKILLS
from ..state import Character
from . import choices, conditions, effects, features
from .equipment import worn_armor

SHORT = {"str": "strength", "dex": "dexterity", "con": "constitution", "int": "intelligence", "wis": "wisdom",
         "cha": "charisma"}
# Saving throws each class is proficient in (SRD), and the skills a new character of the class takes from the
# class's list (the SRD lets the player choose; these are the usual picks).
CLASS_SAVES: dict[str, tuple[str, str]] = {
    "barbarian": ("strength", "constitution"), "bard": ("dexterity", "charisma"), "cleric": ("wisdom", "charisma"),
    "druid": ("intelligence", "wisdom"), "fighter": ("strength", "constitution"), "monk": ("strength", "dexterity"),
    "paladin": ("wisdom", "charisma"), "ranger": ("strength", "dexterity"), "rogue": ("dexterity", "intelligence"),
    "sorcerer": ("constitution", "charisma"), "warlock": ("wisdom", "charisma"), "wizard": ("intelligence", "wisdom"),
}
CLASS_SKILLS: dict[str, tuple[str, ...]] = {
    "barbarian": ("athletics", "perception"), "bard": ("performance", "persuasion", "deception"),
    "cleric": ("insight", "religion"), "druid": ("nature", "perception"), "fighter": ("athletics", "perception"),
    "monk": ("acrobatics", "stealth"), "paladin": ("athletics", "persuasion"),
    "ranger": ("stealth", "survival", "perception"), "rogue": ("stealth", "sleight of hand", "perception", "deception"),
    "sorcerer": ("arcana", "persuasion"), "warlock": ("arcana", "deception"), "wizard": ("arcana", "investigation"),
}
Mode = Literal["advantage", "disadvantage"] | None
# What the SRD's potions of healing restore, by the names players give them.
HEALING_POTIONS: dict[str, str] = {
    "healing potion": "2d4+2", "potion of healing": "2d4+2", "greater healing potion": "4d4+4",
    "potion of greater healing": "4d4+4", "superior healing potion": "8d4+8", "potion of superior healing": "8d4+8",
    "supreme healing potion": "10d4+20", "potion of supreme healing": "10d4+20",
}


def title(skill: str) -> str:
    """"sleight of hand" → "Sleight of Hand"."""
    return " ".join(w if w == "of" else w.capitalize() for w in skill.split())


def proficiency_bonus(level: int) -> int:
    return 2 + (max(1, level) - 1) // 4


def saves_of(ch: Character) -> tuple[str, ...]:
    """The saving throws a character is proficient in (a character made before they were kept: its class's)."""
    return tuple(ch.saves) or CLASS_SAVES.get(ch.char_class, ())


def skills_of(ch: Character) -> tuple[str, ...]:
    return tuple(ch.skills) or CLASS_SKILLS.get(ch.char_class, ())


@dataclass(frozen=True)
class Check:
    label: str  # "Stealth check", "Dexterity saving throw"
    ability: str
    proficient: bool
    modifier: int
    roll: Roll

    def outcome(self, dc: int | None) -> str:
        """The roll and, against a DC, whether it succeeds (a natural 20 or 1 decides nothing on a check)."""
        text = f"{self.label} {self.roll.describe()}"
        return text if dc is None else f"{text} vs DC {dc}: {'success' if self.roll.total >= dc else 'failure'}"


def expertise(ch: Character) -> list[str]:
    """The skills the character has Expertise in (engine/rules/choices.py)."""
    return choices.expertise_of(ch, list(skills_of(ch)))


def proficiencies(ch: Character) -> str:
    """The sheet's line of proficiencies: the bonus, the saves, the skills (Expertise marked) and a fighting style."""
    saves = ", ".join(a.capitalize() for a in saves_of(ch)) or "none"
    doubled = expertise(ch)
    skills = ", ".join(title(s) + (" (expertise)" if s in doubled else "") for s in skills_of(ch)) or "none"
    style = choices.style_of(ch)
    return (f"Proficiency +{proficiency_bonus(ch.level)} · saves: {saves} · skills: {skills}"
            + (f" · fighting style: {style}" if style else ""))


def ability_of(what: str) -> str | None:
    key = " ".join(what.strip().lower().split())
    return SHORT.get(key[:3]) if key[:3] in SHORT and (key in SHORT or key in ABILITIES) else None


def check(ch: Character, what: str, rng: random.Random, mode: Mode = None, *, save: bool = False,
          against: str | None = None) -> Check:
    """A skill or ability check (`save`: a saving throw) by the sheet: the ability's modifier, plus the
    proficiency bonus when the character is proficient, on 1d20 (2d20 keeping one with advantage/disadvantage).
    `against`: what a save resists (poison, magic, fear, charm), for the species traits that give advantage."""
    key = " ".join(what.strip().lower().split())
    ability = ability_of(key)
    if save:
        if ability is None:
            raise BadInput(f"'{what}' is not an ability: a saving throw is strength, dexterity, constitution, "
                           f"intelligence, wisdom or charisma (or str, dex, …).")
        proficient, label = ability in saves_of(ch), f"{ability.capitalize()} saving throw"
    elif key in SKILLS:
        ability, proficient, label = SKILLS[key], key in skills_of(ch), f"{title(key)} check"
    elif ability is not None:
        proficient, label = False, f"{ability.capitalize()} check"
    else:
        close = difflib.get_close_matches(key, [*SKILLS, *ABILITIES], n=1, cutoff=0.6)
        raise BadInput(f"'{what}' is neither a skill nor an ability." + (f" Did you mean {close[0]}?" if close else "")
                       + f" Skills: {', '.join(SKILLS)}.")
    bonus = ch.abilities.mod(ability) + (proficiency_bonus(ch.level) if proficient else 0)
    if not save and proficient and key in expertise(ch):  # Expertise: the proficiency bonus twice
        bonus += proficiency_bonus(ch.level)
        label += " (expertise)"
    gained, feature = (0, "") if save or proficient else features.half_proficiency(ch, ability)
    if save:
        gained, feature = features.save_bonus(ch)  # Aura of Protection
    if gained:
        bonus += gained
        label += f" ({feature} {gained:+d})"
    if save:
        failed = conditions.fails_save(ch.conditions, ability)
        if failed:  # paralysed, stunned, unconscious: STR and DEX saves fail without a roll
            return Check(label + f" (fails: {failed})", ability, proficient, bonus,
                         Roll(f"no roll ({failed})", 0, "an automatic failure", None))
        mode, why = conditions.save_mode(mode, ch.conditions, ability,
                                         effects.save_advantage(ch, ability) + features.save_advantage(ch, ability)
                                         + features.species_advantage(ch, ability, against))
        added, spells = effects.roll_terms(ch, "save", ability)
    else:
        mode, why = conditions.check_mode(mode, ch.conditions, effects.check_advantage(ch, ability))
        added, spells = effects.roll_terms(ch, "check", ability)
    if spells:
        label += f" ({', '.join(spells)})"
    if why:
        label += f" ({why})"
    if key == "stealth" and not save:  # armour that clanks: disadvantage (with advantage too, a plain roll)
        armour = worn_armor(ch)
        if armour is not None and armour.stealth_disadvantage:
            label += f" (disadvantage: {armour.name})"
            mode = None if mode == "advantage" else "disadvantage"
    expression = (f"1d20{bonus:+d}" if bonus else "1d20") + added
    if mode is not None:
        expression += " adv" if mode == "advantage" else " dis"
    rolled = roll(expression, rng)
    if rolled.natural == 1 and ch.species == "halfling":  # Lucky: a natural 1 is rolled again, and that stands
        again = roll(expression, rng)
        rolled = Roll(f"{again.expression} (Lucky: a 1 rolled again)", again.total, again.detail, again.natural)
    return Check(label, ability, proficient, bonus, rolled)


def creature_save(creature: object, ability: str) -> int:
    """A creature's saving throw bonus (an NPC's or a combatant's stat block): its proficient save when it has one,
    else its ability modifier, else +0 (no scores written)."""
    saves = getattr(creature, "saves", None) or {}
    if ability in saves:
        return saves[ability]
    scores = getattr(creature, "abilities", None)
    return scores.mod(ability) if scores is not None else 0


def creature_save_roll(creature: object, ability: str, rng: random.Random, mode: Mode = None) -> Roll:
    """A saving throw of anyone but a player character: by their stat block (creature_save) and their conditions
    (a paralysed creature fails STR and DEX saves, a restrained one rolls DEX at a disadvantage)."""
    held = list(getattr(creature, "conditions", None) or [])
    failed = conditions.fails_save(held, ability)
    if failed:
        return Roll(f"no roll ({failed})", 0, "an automatic failure", None)
    mode, _ = conditions.save_mode(mode, held, ability, effects.save_advantage(creature, ability))
    bonus = creature_save(creature, ability)
    added, _spells = effects.roll_terms(creature, "save", ability)
    return roll((f"1d20{bonus:+d}" if bonus else "1d20") + added
                + {"advantage": " adv", "disadvantage": " dis"}.get(mode or "", ""), rng)
