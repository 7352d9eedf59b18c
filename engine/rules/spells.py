"""5e spellcasting (SRD 5.1, CC-BY-4.0): the spells of levels 0 to 3 and the casting classes' tables, read once from
data/spells.yaml, and the arithmetic of casting: slots, the attack bonus and save DC, and dice scaled by slot and
character level."""

from __future__ import annotations

import difflib
import re
from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field, ValidationError, model_validator

from ..errors import BadInput, ConfigError
from ..basics import Abilities, Model
from ..state import Character
from ..validation import describe_validation
from .checks import proficiency_bonus
from .conditions import DESCRIPTIONS as _CONDITIONS
from .effects import Grant

DATA = Path(__file__).resolve().parent / "data" / "spells.yaml"
CASTERS = ("bard", "cleric", "druid", "paladin", "ranger", "sorcerer", "warlock", "wizard")
CONDITION_NAMES = frozenset(_CONDITIONS)
AREA_TARGETS = 12  # an area spell affects everyone named, up to this many
Ability = Literal["strength", "dexterity", "constitution", "intelligence", "wisdom", "charisma"]
Caster = Literal["bard", "cleric", "druid", "paladin", "ranger", "sorcerer", "warlock", "wizard"]
_DICE = r"^(\d{1,2}d\d{1,2}|\d{1,2})([+-]\d{1,2})?$"  # 3d6, 1d4+1, 5


class Dice(Model):
    dice: str = Field(pattern=_DICE)
    type: str | None = None  # the damage type (healing has none)
    modifier: bool = False  # the caster's spellcasting modifier is added
    per_slot: str | None = Field(None, pattern=_DICE)  # added for each slot level above the spell's
    every: int = Field(1, ge=1, le=2)  # per_slot counts every `every` slot levels


class Rolled(Model):
    dice: str = Field(pattern=_DICE)
    per_slot: str | None = Field(None, pattern=_DICE)
    what: str = Field(min_length=3, max_length=80)


class Spell(Model):
    name: str = Field(min_length=2, max_length=40)
    level: int = Field(ge=0, le=9)
    school: Literal["abjuration", "conjuration", "divination", "enchantment", "evocation", "illusion", "necromancy",
                    "transmutation"]
    casting_time: str
    range: str
    duration: str
    concentration: bool = False
    ritual: bool = False
    classes: list[Caster] = Field(min_length=1)
    attack: Literal["melee", "ranged"] | None = None
    save: Ability | None = None
    half: bool = False
    miss_half: bool = False  # a spell attack that still deals half its damage on a miss (Acid Arrow)
    damage: Dice | None = None
    healing: Dice | None = None
    count: int = Field(1, ge=1, le=5)  # darts, rays or beams, each rolled on its own
    count_per_slot: int = Field(0, ge=0, le=2)
    beams: bool = False  # a cantrip whose beams (not its dice) grow with the caster's level
    targets: int = Field(1, ge=1, le=10)
    targets_per_slot: int = Field(0, ge=0, le=2)
    area: str | None = None
    drain: bool = False
    roll: Rolled | None = None
    effect: str | None = Field(None, max_length=120)
    description: str = Field(min_length=10, max_length=300)
    grants: Grant | None = None  # what it leaves on those it affects while it lasts (engine/rules/effects.py)

    @model_validator(mode="after")
    def _consistent(self) -> "Spell":
        if self.attack and self.save:
            raise ValueError("a spell is either an attack or a saving throw, not both")
        if self.half and not (self.save and self.damage):
            raise ValueError("half damage on a save needs a save and damage")
        if self.miss_half and not (self.attack and self.damage):
            raise ValueError("half damage on a miss needs a spell attack and damage")
        if self.damage and self.healing:
            raise ValueError("a spell here deals damage or heals, not both")
        if (self.beams or self.drain or self.count > 1) and not self.damage:
            raise ValueError("beams, darts and drain need damage")
        if self.beams and (self.level or not self.attack):
            raise ValueError("beams are a cantrip's spell attacks")
        if self.damage and not self.damage.type:
            raise ValueError("damage needs a type")
        if self.level == 0 and any(d and d.per_slot for d in (self.damage, self.healing, self.roll)):
            raise ValueError("a cantrip takes no slot, so nothing scales with one")
        if self.grants is not None and self.grants.repeat and not self.save:
            raise ValueError("a repeated save needs the spell's save")
        if self.grants is not None and self.grants.condition and self.grants.condition not in CONDITION_NAMES:
            raise ValueError(f"'{self.grants.condition}' is not an SRD condition")
        return self

    @property
    def harmful(self) -> bool:
        return bool(self.attack or self.save or self.damage)

    def max_targets(self, slot: int | None) -> int:
        if self.area:
            return AREA_TARGETS
        return max(self.targets + self.targets_per_slot * ((slot or self.level) - self.level), self.count)


class ClassCasting(Model):
    ability: Ability
    slots: Literal["full", "half", "pact"]
    prepares: bool  # prepares from its list each day (level + modifier) rather than knowing a fixed few
    cantrips: list[int] = Field(min_length=20, max_length=20)
    known: list[int] | None = Field(None, min_length=20, max_length=20)
    start_cantrips: list[str]
    start: list[str]


class SpellData(Model):
    slots: dict[Literal["full", "half"], list[list[int]]]
    pact: list[tuple[int, int]] = Field(min_length=20, max_length=20)
    classes: dict[Caster, ClassCasting]
    spells: list[Spell]

    @model_validator(mode="after")
    def _complete(self) -> "SpellData":
        if set(self.classes) != set(CASTERS) or set(self.slots) != {"full", "half"}:
            raise ValueError("every casting class and both slot tables are needed")
        if any(len(rows) != 20 or any(len(r) > 9 for r in rows) for rows in self.slots.values()):
            raise ValueError("a slot table has one row per level, 1 to 20, of at most nine spell levels")
        names = [key(s.name) for s in self.spells]
        if len(set(names)) != len(names):
            raise ValueError("spell names must be unique")
        by_name = dict(zip(names, self.spells))
        for cls, casting in self.classes.items():
            if casting.prepares == (casting.known is not None):
                raise ValueError(f"{cls}: a class either prepares its spells or has a table of spells known")
            for n in casting.start_cantrips + casting.start:
                found = by_name.get(key(n))
                if found is None or cls not in found.classes or (found.level == 0) != (n in casting.start_cantrips):
                    raise ValueError(f"{cls}: starting pick '{n}' is not a {cls} spell of that kind")
        return self


def key(name: str) -> str:
    return " ".join(name.replace("’", "'").casefold().split())


@cache
def data() -> SpellData:
    """The spell data, read and checked once."""
    try:
        raw = yaml.safe_load(DATA.read_text(encoding="utf-8"))
        return SpellData.model_validate(raw)
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"Cannot read the spell data {DATA}: {exc}") from exc
    except ValidationError as exc:
        raise ConfigError(f"The spell data {DATA} is invalid:\n{describe_validation(exc, raw, SpellData)}") from exc


@cache
def spell_index() -> dict[str, Spell]:
    return {key(s.name): s for s in data().spells}


def find_spell(name: str) -> Spell:
    """A spell by name, ignoring case; an unknown name says which spell it may be."""
    found = spell_index().get(key(name))
    if found is None:
        close = difflib.get_close_matches(key(name), list(spell_index()), n=1, cutoff=0.6)
        hint = f"; did you mean {spell_index()[close[0]].name}?" if close else ""
        raise BadInput(f"'{name}' is not a spell I know (the SRD's cantrips to 3rd level{hint}).")
    return found


def ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def level_name(spell: Spell) -> str:
    return "cantrip" if spell.level == 0 else f"{ordinal(spell.level)}-level"


# -- the class tables ---------------------------------------------------------------------------------------------

def casting(class_name: str) -> ClassCasting | None:
    return data().classes.get(class_name)  # type: ignore[call-overload]


def slots_for(class_name: str, level: int) -> dict[int, int]:
    """The spell slots a class has at a level, by spell level (a warlock's pact slots are all of one level)."""
    cls = casting(class_name)
    if cls is None or not 1 <= level <= 20:
        return {}
    if cls.slots == "pact":
        count, slot_level = data().pact[level - 1]
        return {slot_level: count}
    return {n: count for n, count in enumerate(data().slots[cls.slots][level - 1], 1) if count}


def slots_left(ch: Character) -> dict[int, int]:
    return {n: max(0, most - ch.slots_spent.get(n, 0)) for n, most in slots_for(ch.char_class, ch.level).items()}


def max_spell_level(class_name: str, level: int) -> int:
    return max(slots_for(class_name, level), default=0)


def cantrips_allowed(class_name: str, level: int) -> int:
    cls = casting(class_name)
    return cls.cantrips[level - 1] if cls is not None else 0


def spells_allowed(class_name: str, level: int, abilities: Abilities) -> int:
    """Spells known, or prepared each day (class level, half of it for paladins, plus the casting modifier)."""
    cls = casting(class_name)
    if cls is None or not slots_for(class_name, level):
        return 0
    if cls.known is not None:
        return cls.known[level - 1]
    return max(1, (level // 2 if cls.slots == "half" else level) + abilities.mod(cls.ability))


def starting_spells(class_name: str, level: int, abilities: Abilities) -> tuple[list[str], list[str]]:
    """A new character's cantrips and spells: its class's starting picks in order, as many as its level allows."""
    cls = casting(class_name)
    if cls is None:
        return [], []
    highest = max_spell_level(class_name, level)
    spells = [n for n in cls.start if find_spell(n).level <= highest]
    return (cls.start_cantrips[:cantrips_allowed(class_name, level)],
            spells[:spells_allowed(class_name, level, abilities)])


def learn_new_spells(ch: Character) -> list[str]:
    """After a level-up: the class's next starting picks, up to what the new level allows; returns what was added.
    (Slots need nothing: the maximum follows the level, and what was spent stays spent until a rest.)"""
    cls = casting(ch.char_class)
    if cls is None:
        return []
    cantrips, spells = cantrips_of(ch), spells_of(ch)
    highest = max_spell_level(ch.char_class, ch.level)
    new_c = [n for n in cls.start_cantrips if n not in cantrips][:max(0, cantrips_allowed(ch.char_class, ch.level) - len(cantrips))]
    new_s = [n for n in cls.start if n not in spells and find_spell(n).level <= highest][
        :max(0, spells_allowed(ch.char_class, ch.level, ch.abilities) - len(spells))]
    ch.cantrips, ch.spells = cantrips + new_c, spells + new_s
    return new_c + new_s


def check_picks(class_name: str, level: int, abilities: Abilities, cantrips: list[str] | None,
                spells: list[str] | None) -> list[str]:
    """What is wrong with a chosen list of cantrips and spells for a class and level (nothing: an empty list)."""
    problems: list[str] = []
    cls = casting(class_name)
    for field, names, cantrip in (("cantrips", cantrips, True), ("spells", spells, False)):
        if names is None:
            continue
        if cls is None and names:
            problems.append(f"{field}: a {class_name} casts no spells")
            continue
        allowed = cantrips_allowed(class_name, level) if cantrip else spells_allowed(class_name, level, abilities)
        if len(names) > allowed:
            problems.append(f"{field}: a level-{level} {class_name} has {allowed} {field if cantrip else 'spells'}"
                            f"{'' if cantrip else (' prepared' if cls and cls.prepares else ' known')}, not {len(names)}")
        for n in names:
            s = find_spell(n)
            if class_name not in s.classes:
                problems.append(f"{field}: {s.name} is not a {class_name} spell ({', '.join(s.classes)})")
            elif cantrip and s.level:
                problems.append(f"cantrips: {s.name} is a {level_name(s)} spell; list it under spells")
            elif not cantrip and not s.level:
                problems.append(f"spells: {s.name} is a cantrip; list it under cantrips")
            elif s.level > max_spell_level(class_name, level):
                problems.append(f"spells: {s.name} is a {level_name(s)} spell; a level-{level} {class_name} casts "
                                f"up to {ordinal(max_spell_level(class_name, level))} level")
    return problems


# -- a character's spellcasting -------------------------------------------------------------------------------------

def cantrips_of(ch: Character) -> list[str]:
    """A character's cantrips (one saved before spells were kept: its class's starting picks)."""
    return list(ch.cantrips) or starting_spells(ch.char_class, ch.level, ch.abilities)[0]


def spells_of(ch: Character) -> list[str]:
    return list(ch.spells) or starting_spells(ch.char_class, ch.level, ch.abilities)[1]


def casting_mod(ch: Character) -> int:
    cls = casting(ch.char_class)
    return ch.abilities.mod(cls.ability) if cls is not None else 0


def attack_bonus(ch: Character) -> int:
    return proficiency_bonus(ch.level) + casting_mod(ch)


def save_dc(ch: Character) -> int:
    return 8 + proficiency_bonus(ch.level) + casting_mod(ch)


def known_spell(ch: Character, name: str) -> Spell:
    """A spell the character can cast now: known or prepared (a cantrip, or a spell of a level it has slots for)."""
    spell = find_spell(name)
    cls = casting(ch.char_class)
    if cls is None:
        raise BadInput(f"{ch.name} is a {ch.char_class} and casts no spells.")
    if spell.name not in (cantrips_of(ch) if spell.level == 0 else spells_of(ch)):
        how = "has not prepared" if cls.prepares and spell.level else "does not know"
        raise BadInput(f"{ch.name} {how} {spell.name}. {repertoire(ch)}")
    return spell


def repertoire(ch: Character) -> str:
    cantrips, spells = cantrips_of(ch), spells_of(ch)
    parts = [f"Cantrips: {', '.join(cantrips)}." if cantrips else "",
             f"Spells: {', '.join(f'{n} ({ordinal(find_spell(n).level)})' for n in spells)}." if spells else ""]
    return " ".join(p for p in parts if p) or f"{ch.name} has no spells yet."


def choose_slot(ch: Character, spell: Spell, level: int | None) -> int | None:
    """The slot a casting spends: the level asked for, else the lowest left that the spell fits; None for a cantrip.
    Refuses, changing nothing, when there is none."""
    if spell.level == 0:
        if level is not None:
            raise BadInput(f"{spell.name} is a cantrip and uses no spell slot; leave the level out.")
        return None
    left = slots_left(ch)
    if level is not None:
        if level < spell.level:
            raise BadInput(f"{spell.name} is a {level_name(spell)} spell: it needs a slot of {ordinal(spell.level)} "
                           f"level or higher, not {ordinal(level)}.")
        if left.get(level, 0) < 1:
            have = "has no" if level not in left else "has no more"
            raise BadInput(f"{ch.name} {have} {ordinal(level)}-level spell slots{' left' if level in left else ''}. "
                           f"{slots_line(ch)}")
        return level
    fitting = [n for n in sorted(left) if n >= spell.level and left[n] > 0]
    if not fitting:
        raise BadInput(f"{ch.name} has no spell slot of {ordinal(spell.level)} level or higher left for {spell.name}. "
                       f"{slots_line(ch)} A long rest brings them back"
                       f"{' (a short rest too, for pact magic)' if casting(ch.char_class).slots == 'pact' else ''}.")
    return fitting[0]


def slots_text(ch: Character) -> str:
    """Slots left of the most, by level: "1st 2/4, 2nd 3/3" ("none" before a class's first slots)."""
    most, left = slots_for(ch.char_class, ch.level), slots_left(ch)
    return ", ".join(f"{ordinal(n)} {left[n]}/{most[n]}" for n in sorted(most)) or "none"


def slots_line(ch: Character) -> str:
    return f"Slots left: {slots_text(ch)}."


def spend(ch: Character, slot: int | None) -> None:
    if slot is not None:
        ch.slots_spent = {**ch.slots_spent, slot: ch.slots_spent.get(slot, 0) + 1}


def recover(ch: Character, rest: Literal["short", "long"]) -> str:
    """What a rest brings back: a long rest all spell slots (and it ends concentration), a short rest a warlock's pact
    slots; returns a note for the rest's report (empty: nothing changed)."""
    notes = []
    cls = casting(ch.char_class)
    if cls is not None and ch.slots_spent and (rest == "long" or cls.slots == "pact"):
        ch.slots_spent = {}
        notes.append("spell slots restored")
    if rest == "long" and ch.concentration:
        notes.append(f"concentration on {ch.concentration} ends")
        ch.concentration = None
    return ", ".join(notes)


def cantrip_tier(level: int) -> int:
    return 1 + (level >= 5) + (level >= 11) + (level >= 17)


def scaled(base: str, per_slot: str | None, steps: int, times: int = 1, add: int = 0) -> str:
    """A dice expression: `base` with its dice multiplied by `times`, `per_slot` added `steps` times (folded into
    the base's dice when the die is the same), and `add` added: scaled("3d6", "1d6", 2) == "5d6"."""
    m = re.fullmatch(r"(?:(\d+)d(\d+))?([+-]\d+)?", base if "d" in base else f"0d1+{base}")
    assert m is not None
    count, size, flat = int(m.group(1) or 0) * times, int(m.group(2) or 1), int(m.group(3) or 0) + add
    extra = ""
    if per_slot and steps:
        p = re.fullmatch(r"(?:(\d+)d(\d+))?([+-]\d+)?", per_slot if "d" in per_slot else f"0d1+{per_slot}")
        assert p is not None
        dice_per_slot = int(p.group(1) or 0)  # "5" is read as 0d1+5: no dice, only the flat 5
        if dice_per_slot and int(p.group(2)) == size:
            count += dice_per_slot * steps
        elif dice_per_slot:
            extra = f"+{dice_per_slot * steps}d{p.group(2)}"
        flat += int(p.group(3) or 0) * steps
    dice = f"{count}d{size}" if count else ""
    text = dice + extra + (f"{flat:+d}" if flat else "")
    return text.lstrip("+") or "0"


def dice_for(spell: Spell, effect: Dice | Rolled, slot: int | None, ch: Character) -> str:
    """The dice a casting rolls: grown by the slot (levelled spells) or the character's level (cantrips)."""
    steps = ((slot or spell.level) - spell.level) // (getattr(effect, "every", 1) or 1)
    times = cantrip_tier(ch.level) if spell.level == 0 and not spell.beams else 1
    add = casting_mod(ch) if getattr(effect, "modifier", False) else 0
    return scaled(effect.dice, effect.per_slot, steps, times, add)


def beams(spell: Spell, slot: int | None, ch: Character) -> int:
    if spell.beams:
        return cantrip_tier(ch.level)
    return spell.count + spell.count_per_slot * ((slot or spell.level) - spell.level)


def sheet_lines(ch: Character) -> list[str]:
    """The sheet's spellcasting: ability, attack bonus and DC, slots left, cantrips, spells, concentration (nothing
    for a class that casts no spells)."""
    cls = casting(ch.char_class)
    if cls is None:
        return []
    lines = [f"{cls.ability.capitalize()} · spell attack {attack_bonus(ch):+d} · save DC {save_dc(ch)} · "
             f"slots {slots_text(ch)}" + (" (pact magic)" if cls.slots == "pact" else "")]
    if cantrips_of(ch):
        lines.append("Cantrips: " + ", ".join(cantrips_of(ch)))
    if spells_of(ch):
        lines.append(("Prepared: " if cls.prepares else "Known: ")
                     + ", ".join(f"{n} ({ordinal(find_spell(n).level)})" for n in spells_of(ch)))
    if ch.concentration:
        lines.append(f"Concentrating on {ch.concentration}")
    return lines
