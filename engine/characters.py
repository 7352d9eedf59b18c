"""Making player characters: a class, a species and a background (engine/rules/data), ability scores, and what
follows from them: hit points, armour class from the armour carried, skills, equipment and coin."""

from __future__ import annotations

import difflib
import random
import unicodedata
from typing import Any

from pydantic import Field, NonNegativeInt, PositiveInt, ValidationError, field_validator

from .errors import BadInput
from .rules import SKILLS, origins, spells
from .rules.data import Background, ClassData, Species, background as find_background, rules, species as find_species
from .rules.choices import check_choices
from .rules.equipment import armor_class
from .rules.levels import extra_hp, max_hit_points
from .basics import ABILITIES, Abilities, Currency, Item, Model, modifier, xp_for
from .state import Character
from .validation import describe_validation

STANDARD_ARRAY = (15, 14, 13, 12, 10, 8)


# The classes, from engine/rules/data/classes.yaml: hit die, ability priorities, proficiencies, equipment.
CLASSES: dict[str, ClassData] = rules().classes
SPECIES: dict[str, Species] = rules().species
BACKGROUNDS: dict[str, Background] = rules().backgrounds


POINT_COST = {8: 0, 9: 1, 10: 2, 11: 3, 12: 4, 13: 5, 14: 7, 15: 9}
POINTS = 27


def ability_scores(scores: str | None, class_name: str, rng: random.Random) -> tuple[Abilities | None, str]:
    """Scores as the SRD lets players choose them: `standard` (the standard array, by the class's priorities),
    `roll` (4d6 dropping the lowest, six times, the best to the class's first ability), or six numbers in the
    order STR DEX CON INT WIS CHA (the standard array in any order, or a 27-point buy). Returns the scores (None:
    the standard array) and how they were made, for the table to see."""
    choice = " ".join((scores or "standard").lower().replace(",", " ").split())
    cls = CLASSES.get(class_name.strip().lower())
    if choice == "standard" or cls is None:  # an unknown class is make_character's to refuse
        return None, "the standard array"
    if choice == "roll":
        sets = [sorted(rng.randint(1, 6) for _ in range(4)) for _ in range(6)]
        totals = sorted((sum(d[1:]) for d in sets), reverse=True)
        shown = "; ".join(f"{d[1]}+{d[2]}+{d[3]} (dropped {d[0]})" for d in sets)
        return Abilities(**dict(zip(cls.priorities, totals))), f"4d6 dropping the lowest: {shown}"
    parts = choice.split()
    if len(parts) != 6 or not all(p.isdigit() for p in parts):
        raise BadInput("Scores are 'standard', 'roll', or six numbers in the order STR DEX CON INT WIS CHA "
                       "(e.g. 15 14 13 12 10 8).")
    numbers = [int(p) for p in parts]
    if sorted(numbers, reverse=True) == list(STANDARD_ARRAY):
        made = "the standard array"
    elif all(n in POINT_COST for n in numbers) and sum(POINT_COST[n] for n in numbers) <= POINTS:
        made = f"point buy ({sum(POINT_COST[n] for n in numbers)} of {POINTS} points)"
    else:
        spent = sum(POINT_COST.get(n, 99) for n in numbers)
        why = ("each score is 8 to 15 before species bonuses" if any(n not in POINT_COST for n in numbers)
               else f"that costs {spent} points, and a point buy has {POINTS}")
        raise BadInput(f"{' '.join(parts)} is neither the standard array (15 14 13 12 10 8, in any order) nor a "
                       f"point buy: {why}.")
    return Abilities(**dict(zip(ABILITIES, numbers))), made


def make_character(owner_id: str, name: str, class_name: str, level: int = 1, abilities: Abilities | None = None,
                   species: str | None = None, background: str | None = None, *,
                   increases: bool = True, expertise: list[str] | None = None, style: str | None = None) -> Character:
    """A ready-to-play character: the standard array by class (or the scores given) raised by the species
    (unless `increases` is off: scores already final, as an imported sheet's), hit points by level, the class's
    and background's equipment, AC from the armour in it, and skills from class, background and species.
    The species defaults to human, the background to the class's usual one; `expertise` (skills it is proficient in)
    and `style` (a fighting style) are the class's choices, its usual ones when not given (engine/rules/choices.py)."""
    name = " ".join(name.split())
    cls = CLASSES.get(class_name.strip().lower())
    if cls is None:
        close = difflib.get_close_matches(class_name.strip().lower(), list(CLASSES), n=1, cutoff=0.6)
        hint = f" Did you mean {close[0]}?" if close else ""
        raise BadInput(f"'{class_name}' is not a class I know.{hint} Choose one of: {', '.join(CLASSES)}.")
    sp = find_species(species or origins.DEFAULT_SPECIES)
    bg = find_background(background or cls.background)
    if not 1 <= level <= 20:
        raise BadInput("Level must be between 1 and 20.")
    if not name or len(name) > 40:
        raise BadInput("A character's name must be 1 to 40 characters long.")
    if any(unicodedata.category(c) in ("Cc", "Cf") and c != "\u200d" for c in name):  # (ZWJ joins emoji)
        raise BadInput("A character's name cannot hold invisible characters (zero-width spaces, direction marks, "
                       "control codes): they hide or reverse how it reads.")
    if name.startswith("/"):
        raise BadInput(f"'{name}' looks like a command, not a name: give your character's name first.")
    if any(ch in name for ch in "<>@`*_~|#[]:"):
        raise BadInput("A character's name may not contain < > @ ` * _ ~ | # [ ] or :.")
    if abilities is None:
        scores = dict(zip(cls.priorities, STANDARD_ARRAY))
        abilities = Abilities(**{a: scores[a] for a in ABILITIES})
    if increases:
        abilities = origins.increased(abilities, sp, cls)
    cantrips, known = spells.starting_spells(cls.name, level, abilities)
    try:
        made = Character(owner_id=owner_id, name=name, char_class=cls.name, level=level, hp=1, max_hp=1, ac=10,
                         abilities=abilities, hit_die=cls.hit_die, hit_dice=level,
                         inventory=origins.equipment(cls, bg), currency=Currency(gp=bg.gold),
                         saves=list(cls.saves), skills=origins.skills(cls, sp, bg), species=sp.name,
                         background=bg.name, cantrips=cantrips, spells=known)
        max_hp = max_hit_points(cls.hit_die, modifier(abilities.constitution), level, extra_hp(made))
        made.max_hp = made.hp = max_hp
        made.expertise, made.fighting_style = check_choices(cls.name, level, made.skills, expertise, style)
        made.ac = armor_class(made).value
        return made
    except ValidationError as exc:  # pragma: no cover - the checks above keep every class valid
        raise BadInput(f"Cannot make that character: {exc.errors()[0]['msg']}") from exc


MAX_ITEMS = 100  # kinds of item a character file may carry
MAX_STACK = 1000  # of one item
MAX_WEALTH_CP = 100_000_000  # 1,000,000 gp in all: more than a level-20 hero's hoard


class CharacterFile(Model):
    """A character to import (docs/character-format.md): what is left out comes from the class, as /char create
    would make it."""

    name: str
    class_: str = Field(alias="class")
    level: int = Field(1, ge=1, le=20)
    abilities: Abilities | None = None
    max_hp: PositiveInt | None = None
    hp: NonNegativeInt | None = None
    ac: int | None = Field(None, ge=1, le=40)
    saves: list[str] | None = None
    skills: list[str] | None = None
    inventory: list[Item] | None = Field(None, max_length=MAX_ITEMS)
    currency: Currency | None = None
    xp: NonNegativeInt | None = None
    cantrips: list[str] | None = None
    spells: list[str] | None = None
    species: str | None = None
    background: str | None = None

    @field_validator("species")
    @classmethod
    def _species(cls, value: str | None) -> str | None:
        return None if value is None else _entry(find_species, value)

    @field_validator("background")
    @classmethod
    def _background(cls, value: str | None) -> str | None:
        return None if value is None else _entry(find_background, value)

    @field_validator("saves")
    @classmethod
    def _abilities(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else [_known(v, ABILITIES, "an ability") for v in value]

    @field_validator("skills")
    @classmethod
    def _skills(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else [_known(v, tuple(SKILLS), "a skill") for v in value]

    @field_validator("cantrips", "spells")
    @classmethod
    def _spells(cls, value: list[str] | None) -> list[str] | None:
        try:
            return None if value is None else list(dict.fromkeys(spells.find_spell(v).name for v in value))
        except BadInput as exc:
            raise ValueError(exc.message.rstrip(".")) from None


def _entry(find: Any, value: str) -> str:
    try:
        return find(value).name
    except BadInput as exc:
        raise ValueError(exc.message.rstrip(".")) from None


def _known(value: str, known: tuple[str, ...], what: str) -> str:
    key = " ".join(value.strip().lower().split())
    if key in known:
        return key
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    raise ValueError(f"'{value}' is not {what}" + (f": did you mean '{close[0]}'?" if close else f" ({', '.join(known)})"))


def import_character(owner_id: str, data: Any) -> Character:
    """A character from an imported file's JSON data, checked field by field; BadInput lists every problem."""
    if not isinstance(data, dict):
        raise BadInput("A character file holds one JSON object ({\"name\": …, \"class\": …}); see docs/character-format.md.")
    try:
        given = CharacterFile.model_validate(data)
    except ValidationError as exc:
        raise BadInput("The character file has problems:\n" + describe_validation(exc, data, CharacterFile)) from exc
    made = make_character(owner_id, given.name, given.class_, given.level, given.abilities, given.species,
                          given.background, increases=given.abilities is None)
    update: dict[str, Any] = {k: v for k, v in (("max_hp", given.max_hp), ("ac", given.ac), ("saves", given.saves),
                                                 ("skills", given.skills), ("inventory", given.inventory),
                                                 ("currency", given.currency), ("cantrips", given.cantrips),
                                                 ("spells", given.spells)) if v is not None}
    wrong = spells.check_picks(made.char_class, made.level, made.abilities, given.cantrips, given.spells)
    if wrong:
        raise BadInput("The character file has problems:\n" + "\n".join(f"- {w}" for w in wrong))
    max_hp = update.get("max_hp", made.max_hp)
    hp = given.hp if given.hp is not None else max_hp
    bounds = _out_of_bounds(given, made, max_hp, hp)
    if bounds:
        raise BadInput("The character file has problems:\n" + "\n".join(f"- {b}" for b in bounds))
    if given.xp is not None:
        update["xp"] = given.xp
    imported = Character.model_validate(made.model_dump() | update | {"hp": hp})
    if given.ac is None:  # no AC given: the one its own pack allows (its armour, shield, unarmoured defence)
        imported.ac = max(1, min(40, armor_class(imported).value))
    return imported


def _out_of_bounds(given: CharacterFile, made: Character, max_hp: int, hp: int) -> list[str]:
    """An imported sheet is held to what play could have given it, as a created one is: hit points no higher than
    every hit die rolled at its maximum, a purse and a pack a character could carry, XP that fits its level."""
    found = []
    con = made.abilities.mod("constitution")
    most = made.level * max(1, made.hit_die + con + extra_hp(made))
    if max_hp > most:
        found.append(f"max_hp: {max_hp:,} is more than a level-{made.level} {made.char_class} with CON {con:+d} can "
                     f"have ({most}, every hit die rolled at its highest)")
    if hp > max_hp:
        found.append(f"hp: {hp:,} is more than max_hp ({max_hp:,})")
    worth = given.currency.total_cp() if given.currency is not None else 0
    if worth > MAX_WEALTH_CP:
        found.append(f"currency: {worth // 100:,} gp in all is more than a character may bring "
                     f"({MAX_WEALTH_CP // 100:,} gp at most)")
    for item in given.inventory or []:
        if item.quantity > MAX_STACK:
            found.append(f"inventory: {item.quantity:,} × {item.name} is more than {MAX_STACK:,} of one thing")
    if given.xp is not None:
        low = xp_for(made.level)
        high = xp_for(made.level + 1) - 1 if made.level < 20 else 10_000_000
        if not low <= given.xp <= high:
            found.append(f"xp: {given.xp:,} does not fit level {made.level} ({low:,} to {high:,}; a level not yet "
                         f"taken is taken in play, with /levelup)")
    return found
