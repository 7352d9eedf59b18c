"""Hit points by level and levelling up (SRD 5.1, CC-BY-4.0): the hit die's maximum at 1st level, then its
average (or a roll) plus the CON modifier each level; one more hit die; the class features of the new level."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ..dice import roll
from ..errors import BadInput
from ..basics import xp_for
from ..state import Character
from . import data, spells
from .checks import ability_of, proficiency_bonus
from .data import Feature

MAX_LEVEL = 20


def average(hit_die: int) -> int:
    """The fixed hit points per level the SRD offers instead of a roll: half the die, plus one."""
    return hit_die // 2 + 1


def extra_hp(ch: Character) -> int:
    """Hit points each level from the species (a hill dwarf's toughness) and the class (draconic resilience)."""
    cls = data.rules().classes.get(ch.char_class)
    sp = data.rules().species.get(ch.species) if ch.species else None
    return (cls.hp_per_level if cls else 0) + (sp.hp_per_level if sp else 0)


def max_hit_points(hit_die: int, con: int, level: int, extra: int = 0) -> int:
    """The hit die's maximum + CON at 1st level, and the average + CON (at least 1) at each level after."""
    return max(1, hit_die + con + extra) + (level - 1) * (max(1, average(hit_die) + con) + extra)


@dataclass(frozen=True)
class LevelUp:
    name: str
    level: int
    gained: int  # hit points
    how: str  # "average 6, CON +2" or "rolled 1d10 → 4, CON +2"
    max_hp: int
    proficiency: int
    proficiency_rose: bool
    features: list[Feature]
    learned: list[str] = field(default_factory=list)  # cantrips and spells the class's picks add at this level
    slots: str = ""  # the spell slots the new level gives, when they changed
    improved: str = ""  # the Ability Score Improvement taken: "Strength +2 to 18"

    def describe(self) -> str:
        """The line the table and the GM read."""
        text = f"{self.name} reaches level {self.level}: +{self.gained} HP ({self.how}), max HP {self.max_hp}"
        if self.proficiency_rose:
            text += f", proficiency bonus +{self.proficiency}"
        if self.features:
            text += ". New: " + "; ".join(f"{f.name} ({f.text.rstrip('.')})" for f in self.features)
        if self.learned:
            text += ". Learns " + ", ".join(self.learned)
        if self.slots:
            text += f". Spell slots: {self.slots}"
        if self.improved:
            text += f". Ability Score Improvement: {self.improved}"
        return text + "."


def earned(ch: Character, leveling: str) -> bool:
    """Whether the game has given `ch` its next level: the XP its threshold needs, or a milestone not yet taken."""
    if ch.level >= MAX_LEVEL:
        return False
    return ch.milestones > 0 if leveling == "milestone" else ch.xp >= xp_for(ch.level + 1)


def progress(ch: Character, leveling: str) -> str:
    """Where a character stands toward its next level, for sheets and the GM's context."""
    if ch.level >= MAX_LEVEL:
        return f"{ch.xp:,} XP (the highest level)"
    if leveling == "milestone":
        return (f"{ch.milestones} level{'s' if ch.milestones != 1 else ''} to take (/levelup)" if ch.milestones
                else "levels by milestone (none to take)")
    need = xp_for(ch.level + 1)
    return f"{ch.xp:,}/{need:,} XP" + (" (level up ready: /levelup)" if ch.xp >= need else "")


ASI = "Ability Score Improvement"


def improvement(ch: Character, improve: str | None, level: int) -> dict[str, int]:
    """The Ability Score Improvement the player chose for `level` ("strength": +2; "strength, dexterity": +1 each),
    checked against the cap of 20; at a level without one, nothing (and a choice is refused). BadInput asks."""
    cls = data.rules().classes.get(ch.char_class)
    due = cls is not None and any(f.name == ASI for f in cls.features_at(level))
    if not due:
        if improve:
            raise BadInput(f"Level {level} brings {ch.name} no Ability Score Improvement.")
        return {}
    if not improve:
        raise BadInput(f"Level {level} brings {ch.name} an Ability Score Improvement: choose it with the level, "
                       f"one ability +2 (improve: strength) or two +1 each (improve: strength, constitution); "
                       f"no score above 20.")
    names = [n.strip() for n in improve.replace("+", ",").split(",") if n.strip()]
    abilities = [ability_of(n) for n in names]
    if not 1 <= len(names) <= 2 or None in abilities or len(set(abilities)) != len(abilities):
        raise BadInput("Name one ability (+2) or two different ones (+1 each): strength, dexterity, constitution, "
                       "intelligence, wisdom, charisma (or str, dex, …).")
    raised = {a: 2 // len(abilities) for a in abilities if a is not None}
    over = [a for a, n in raised.items() if getattr(ch.abilities, a) + n > 20]
    if over:
        raise BadInput(f"{', '.join(a.capitalize() for a in over)} would rise above 20 (now "
                       f"{', '.join(str(getattr(ch.abilities, a)) for a in over)}): choose another.")
    return raised


def level_up(ch: Character, rng: random.Random, rolled: bool = False, leveling: str = "xp",
             improve: str | None = None) -> LevelUp:
    """Raise `ch` one level, in place, if the game has given it (`leveling`: by XP or by milestone, which it
    spends): hit points by the average (or the hit die rolled with `rng`, at least 1 in all) plus CON, one more hit
    die, and at the levels that bring one the Ability Score Improvement the player chose (`improve`); returns what
    changed."""
    if ch.level >= MAX_LEVEL:
        raise BadInput(f"{ch.name} is already level {MAX_LEVEL}, the highest there is.")
    raised = improvement(ch, improve, ch.level + 1) if earned(ch, leveling) else {}
    if not earned(ch, leveling):
        if leveling == "milestone":
            raise BadInput(f"{ch.name} has no level to take: in this game the GM grants levels by milestone, when "
                           f"the story reaches one.")
        need = xp_for(ch.level + 1)
        raise BadInput(f"{ch.name} has {ch.xp:,} XP; level {ch.level + 1} needs {need:,} ({need - ch.xp:,} more). "
                       f"XP comes from play: foes overcome, quests done, as the GM awards it.")
    if leveling == "milestone":
        ch.milestones -= 1
    con, extra = ch.abilities.mod("constitution"), extra_hp(ch)
    if rolled:
        die = roll(f"1d{ch.hit_die}", rng)
        base, how = die.total, f"rolled 1d{ch.hit_die} → {die.total}"
    else:
        base, how = average(ch.hit_die), f"average {average(ch.hit_die)}"
    how += f", CON {con:+d}" + (f", +{extra} {'toughness' if extra == 1 else 'extra'}" if extra else "")
    gained = max(1, base + con) + extra
    before = proficiency_bonus(ch.level)
    ch.level += 1
    ch.max_hp += gained
    if ch.hp > 0:  # someone down stays down until healed: the new hit points are their maximum's
        ch.hp += gained
    ch.hit_dice = min(ch.level, ch.hit_dice + 1)
    if raised:
        ch.abilities = ch.abilities.model_copy(update={a: getattr(ch.abilities, a) + n for a, n in raised.items()})
        rise = ch.abilities.mod("constitution") - con  # a better CON modifier counts for every level, back to 1st
        if rise:
            ch.max_hp += rise * ch.level
            if ch.hp > 0:
                ch.hp += rise * ch.level
    cls = data.rules().classes.get(ch.char_class)
    features = cls.features_at(ch.level) if cls else []
    slots_before = spells.slots_for(ch.char_class, ch.level - 1)
    learned = spells.learn_new_spells(ch)  # the slots themselves follow the level: new ones are there at once
    slots = spells.slots_for(ch.char_class, ch.level)
    shown = ", ".join(f"{spells.ordinal(n)} {k}" for n, k in sorted(slots.items()) if k) if slots != slots_before else ""
    improved = ", ".join(f"{a.capitalize()} +{n} to {getattr(ch.abilities, a)}" for a, n in raised.items())
    return LevelUp(ch.name, ch.level, gained, how, ch.max_hp, proficiency_bonus(ch.level),
                   proficiency_bonus(ch.level) > before, features, learned, shown, improved)
