"""Weapon attacks from the sheet (SRD 5.1, CC-BY-4.0): the ability and proficiency behind the to-hit roll, the
damage dice, and the roll against a target's AC (a natural 20 hits and doubles the dice, a natural 1 misses)."""

from __future__ import annotations

import difflib
import random
import re
from dataclasses import dataclass

from ..dice import Roll, roll
from ..errors import BadInput
from ..state import Character
from . import choices, data
from .checks import Mode, proficiency_bonus
from .data import Weapon
from .equipment import carried_weapons, proficient
from .origins import species_of

_DICE_TERM = re.compile(r"(\d*)d(\d+)")


@dataclass(frozen=True)
class Attack:
    """One weapon in one character's hands."""

    weapon: Weapon
    ability: str
    proficient: bool
    bonus: int  # to hit
    damage: str  # "1d8+3"

    def describe(self) -> str:
        """"longsword +5, 1d8+3 slashing"."""
        reach = f", range {self.weapon.range[0]}/{self.weapon.range[1]} ft" if self.weapon.range else ""
        return f"{self.weapon.name} {self.bonus:+d}, {self.damage} {self.weapon.type}{reach}"


def damage_expression(dice: str, bonus: int) -> str:
    return f"{dice}{bonus:+d}" if bonus else dice


def critical(expression: str) -> str:
    """The same damage with every die doubled: 1d8+3 → 2d8+3."""
    return _DICE_TERM.sub(lambda m: f"{2 * int(m.group(1) or 1)}d{m.group(2)}", expression)


def profile(ch: Character, weapon: Weapon) -> Attack:
    """The to-hit bonus and damage of `weapon` for `ch`: STR for melee, DEX for ranged, the better of the two for
    finesse weapons (and a monk's martial-arts weapons); the proficiency bonus when trained; a versatile weapon
    in two hands when no shield is carried; an unarmed strike as the SRD has it."""
    if weapon.name == UNARMED.name:
        return unarmed(ch)
    strength, dexterity = ch.abilities.mod("strength"), ch.abilities.mod("dexterity")
    cls = data.rules().classes.get(ch.char_class)
    monk_weapon = (cls is not None and cls.martial_arts and
                   (weapon.name == "shortsword" or (weapon.category == "simple" and weapon.kind == "melee"
                                                    and not weapon.has("two-handed") and not weapon.has("heavy"))))
    if weapon.kind == "ranged" and not weapon.has("finesse"):
        ability = "dexterity"
    elif weapon.has("finesse") or monk_weapon:
        ability = "dexterity" if dexterity > strength else "strength"
    else:
        ability = "strength"
    trained = proficient(ch, weapon)
    mod = ch.abilities.mod(ability)
    shield = any(a is not None and a.category == "shield" for a in (data.armor(i.name) for i in ch.inventory))
    two_hands = weapon.has("two-handed") or bool(weapon.versatile and not shield)
    dice = weapon.versatile if weapon.versatile and not shield else weapon.damage
    style = choices.style_of(ch)
    to_hit = mod + (proficiency_bonus(ch.level) if trained else 0) + (2 if style == "archery" and weapon.kind == "ranged" else 0)
    extra = 2 if style == "dueling" and weapon.kind == "melee" and not two_hands else 0
    if style == "great weapon fighting" and weapon.kind == "melee" and two_hands:
        dice = _DICE_TERM.sub(lambda m: f"{m.group(0)}ro<3", dice)  # 1s and 2s rerolled once
    return Attack(weapon, ability, trained, to_hit, damage_expression(dice, mod + extra))


# Fists, feet, a headbutt: every character has them, and is proficient (SRD: 1 + STR bludgeoning damage).
UNARMED = Weapon(name="unarmed strike", category="simple", kind="melee", damage="1", type="bludgeoning")
UNARMED_NAMES = {"unarmed", "unarmed strike", "fist", "fists", "punch", "kick"}


def martial_arts_die(level: int) -> str:
    """The monk's Martial Arts die by level (SRD)."""
    return "1d4" if level < 5 else "1d6" if level < 11 else "1d8" if level < 17 else "1d10"


def unarmed(ch: Character) -> Attack:
    """An unarmed strike: 1 + STR bludgeoning, proficient; a monk's uses the Martial Arts die and the better of
    STR and DEX."""
    cls = data.rules().classes.get(ch.char_class)
    strength, dexterity = ch.abilities.mod("strength"), ch.abilities.mod("dexterity")
    if cls is not None and cls.martial_arts:
        ability = "dexterity" if dexterity > strength else "strength"
        mod = ch.abilities.mod(ability)
        damage = damage_expression(martial_arts_die(ch.level), mod)
    else:
        ability, mod = "strength", strength
        damage = str(max(0, 1 + mod))
    return Attack(UNARMED, ability, True, mod + proficiency_bonus(ch.level), damage)


def too_heavy(ch: Character, weapon: Weapon) -> bool:
    """A heavy weapon in a Small creature's hands attacks with disadvantage (SRD)."""
    species = species_of(ch)
    return weapon.has("heavy") and species is not None and species.size == "Small"


def find_weapon(ch: Character, name: str) -> Weapon:
    """A weapon the character carries, by name (or an unarmed strike); BadInput says what they carry instead."""
    if " ".join(name.lower().split()) in UNARMED_NAMES:
        return UNARMED
    carried = carried_weapons(ch)
    wanted = data.weapon(name)
    if wanted is not None and any(w.name == wanted.name for w in carried):
        return wanted
    names = [w.name for w in carried]
    if wanted is not None:
        raise BadInput(f"{ch.name} carries no {wanted.name}. Weapons carried: {', '.join(names) or 'none'}.")
    close = difflib.get_close_matches(" ".join(name.lower().split()), names, n=1, cutoff=0.6)
    hint = f" Did you mean {close[0]}?" if close else ""
    raise BadInput(f"'{name}' is not a weapon {ch.name} carries.{hint} Weapons carried: {', '.join(names) or 'none'}.")


@dataclass(frozen=True)
class Swing:
    """An attack rolled: the to-hit roll, against an AC when there is a target, and the damage rolled."""

    attack: Attack
    to_hit: Roll
    ac: int | None
    damage: Roll | None  # None: it missed
    forced: bool = False  # a hit that is critical whatever the die (a paralysed target within 5 feet)
    crit_at: int = 20  # the lowest natural roll that is a critical hit (19 for a champion)

    @property
    def critical(self) -> bool:
        return (self.to_hit.natural or 0) >= self.crit_at or (self.forced and self.damage is not None)

    @property
    def hit(self) -> bool | None:
        """Whether it hits (None: no target, so no AC to beat)."""
        if self.ac is None:
            return None
        return self.critical or (self.to_hit.natural != 1 and self.to_hit.total >= self.ac)


def swing(attack: Attack, rng: random.Random, ac: int | None = None, mode: Mode = None,
          crit_on_hit: bool = False, lucky: bool = False, savage: bool = False, extra: str = "", crit_at: int = 20,
          brutal: int = 0) -> Swing:
    """Roll the attack and its damage (the damage counts only on a hit; with no target both are reported);
    `crit_on_hit`: any hit is critical (the target paralysed or unconscious, within 5 feet); `lucky`: a natural 1 is
    rolled again (a halfling); `savage`: a critical hit adds one more weapon die (a half-orc's melee weapon);
    `extra`: dice that spells add to the roll ("+1d4", Bless); `crit_at`: the lowest natural roll that crits
    (Improved Critical); `brutal`: weapon dice more on a critical hit (Brutal Critical)."""
    suffix = {"advantage": " adv", "disadvantage": " dis"}.get(mode or "", "")
    to_hit = roll(f"1d20{attack.bonus:+d}{extra}{suffix}", rng)
    if lucky and to_hit.natural == 1:
        again = roll(f"1d20{attack.bonus:+d}{extra}{suffix}", rng)
        to_hit = Roll(f"{again.expression} (Lucky: a 1 rolled again)", again.total, again.detail, again.natural)
    natural_crit = (to_hit.natural or 0) >= crit_at
    hit = ac is None or natural_crit or (to_hit.natural != 1 and to_hit.total >= ac)
    forced = crit_on_hit and ac is not None and hit
    expression = critical(attack.damage) if natural_crit or forced else attack.damage
    more = (1 if savage else 0) + brutal
    if more and (natural_crit or forced):
        die = _DICE_TERM.search(attack.damage)
        if die is not None:
            expression += f"+{more}d{die.group(2)}"
    damage = roll(expression, rng) if hit else None
    return Swing(attack, to_hit, ac, damage, forced, crit_at)
