"""Class features as rules (SRD 5.1, CC-BY-4.0): the ones that spend something (Rage, Second Wind, Action Surge,
Lay on Hands, Channel Divinity, Bardic Inspiration, Ki, sorcery points, Wild Shape, Arcane Recovery), each counted on
the sheet (`Character.used`) and given back by the rest the SRD says; and the ones that change a number without
spending anything (Sneak Attack's dice, Improved and Brutal Critical, Jack of All Trades, Remarkable Athlete, Danger
Sense, Aura of Protection, Fast and Unarmored Movement, Disciple of Life, Evasion).

Using one (`use`) changes the sheet and says what happened in one sentence; it refuses, changing nothing, with a
sentence why (BadInput): a feature the character does not have, none left, Rage in heavy armour."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Callable, Literal

from ..basics import Effect
from ..dice import roll
from ..errors import BadInput
from ..state import Character
from . import effects

Recharge = Literal["short", "long"]


def _prof(level: int) -> int:
    return 2 + (level - 1) // 4


@dataclass(frozen=True)
class Resource:
    """A feature that is spent: how many uses (or points) a character has, and which rest gives them back."""

    name: str
    cls: str
    level: int  # the class level it comes at
    uses: Callable[[Character], int]
    recharge: Callable[[Character], Recharge]
    unit: str = "use"  # "ki point", "hit point": what one of `uses` is
    text: str = ""  # what spending it does, for the agents and /help
    species: str | None = None  # a species' trait rather than a class's (`cls` is then "")

    def left(self, ch: Character) -> int:
        return max(0, self.uses(ch) - ch.used.get(self.name, 0))


def _rage_uses(ch: Character) -> int:
    return 99 if ch.level >= 20 else [2, 2, 3, 3, 3, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 6, 6, 6][ch.level - 1]


def _cha(ch: Character) -> int:
    return max(1, ch.abilities.mod("charisma"))


def _long(ch: Character) -> Recharge:
    return "long"


def _short(ch: Character) -> Recharge:
    return "short"


RESOURCES: tuple[Resource, ...] = (
    Resource("Rage", "barbarian", 1, _rage_uses, _long,
             text="a minute of advantage on Strength checks and saves, extra Strength melee damage and resistance to "
                  "bludgeoning, piercing and slashing (not in heavy armour; no spells while it lasts)"),
    Resource("Second Wind", "fighter", 1, lambda ch: 1, _short, text="regain 1d10 + fighter level hit points"),
    Resource("Action Surge", "fighter", 2, lambda ch: 2 if ch.level >= 17 else 1, _short,
             text="one more action this turn"),
    Resource("Lay on Hands", "paladin", 1, lambda ch: 5 * ch.level, _long, unit="hit point",
             text="heal a creature touched from the pool (amount=), or spend 5 to cure a poison"),
    Resource("Channel Divinity", "cleric", 2, lambda ch: 3 if ch.level >= 18 else 2 if ch.level >= 6 else 1, _short,
             text="Turn Undead (undead named make a Wisdom save or are turned) or Preserve Life (5 × level hit points "
                  "shared among the wounded named, none above half its maximum)"),
    Resource("Channel Divinity", "paladin", 3, lambda ch: 1, _short,
             text="Sacred Weapon: add your Charisma modifier to attack rolls for a minute"),
    Resource("Bardic Inspiration", "bard", 1, _cha, lambda ch: "short" if ch.level >= 5 else "long",
             text="an ally adds the inspiration die to their next attack roll, save or check"),
    Resource("Ki", "monk", 2, lambda ch: ch.level, _short, unit="ki point",
             text="Flurry of Blows, Patient Defense, Step of the Wind (1 each), Stunning Strike (1: Constitution "
                  "save or stunned)"),
    Resource("Sorcery Points", "sorcerer", 2, lambda ch: ch.level, _long, unit="sorcery point",
             text="make a spell slot (slot=1..5 costs 2, 3, 5, 6, 7 points)"),
    Resource("Wild Shape", "druid", 2, lambda ch: 2, _short, text="take a beast's shape (the GM plays it out)"),
    Resource("Arcane Recovery", "wizard", 1, lambda ch: 1, _long,
             text="after a short rest, regain spent slots worth up to half your level (none of 6th level or above)"),
    Resource("Breath Weapon", "", 1, lambda ch: 1, _short, species="dragonborn",
             text="a 15-foot cone of the ancestry's element at the creatures named: a Dexterity save for half"),
)

SLOT_COST = {1: 2, 2: 3, 3: 5, 4: 6, 5: 7}  # sorcery points for a slot of each level (Flexible Casting)


def resources(ch: Character) -> list[Resource]:
    """The spendable features the character's class gives at their level."""
    return [r for r in RESOURCES if (r.cls == ch.char_class or (r.species is not None and r.species == ch.species))
            and ch.level >= r.level]


def resource(ch: Character, name: str) -> Resource:
    key = " ".join(name.lower().split())
    mine = resources(ch)
    found = next((r for r in mine if r.name.lower() == key or r.name.lower().startswith(key)), None)
    if found is None:
        have = ", ".join(r.name for r in mine) or "none"
        raise BadInput(f"{ch.name} has no feature called '{name}' to use (features that spend something: {have}).")
    return found


def lines(ch: Character) -> list[str]:
    """The sheet's line of what is left: "Rage 2/3 (long rest), Second Wind 1/1 (short rest)"."""
    out = []
    for r in resources(ch):
        most = r.uses(ch)
        count = "unlimited" if most >= 99 else f"{r.left(ch)}/{most}"
        out.append(f"{r.name} {count}{'' if r.unit == 'use' else ' ' + r.unit + 's'} ({r.recharge(ch)} rest)")
    return [", ".join(out)] if out else []


def recover(ch: Character, rest: Recharge) -> str:
    """What a rest gives back (a long rest everything, a short rest what recharges on one); a note or ""."""
    back = [r.name for r in resources(ch) if ch.used.get(r.name) and (rest == "long" or r.recharge(ch) == "short")]
    for name in back:
        ch.used.pop(name, None)
    return f"{', '.join(back)} back" if back else ""


def spend(ch: Character, r: Resource, amount: int = 1) -> None:
    if r.left(ch) < amount:
        left = r.left(ch)
        unit = r.unit if r.unit != "use" else "use"
        raise BadInput(f"{ch.name} has {left} {unit}{'s' if left != 1 else ''} of {r.name} left (needs {amount}); "
                       f"a {r.recharge(ch)} rest brings {'it' if r.unit == 'use' else 'them'} back.")
    ch.used[r.name] = ch.used.get(r.name, 0) + amount


# -- the features that change numbers without spending ------------------------------------------------------------

def has(ch: Character, feature: str, cls: str, level: int) -> bool:
    return ch.char_class == cls and ch.level >= level


def half_proficiency(ch: Character, ability: str) -> tuple[int, str]:
    """What a check the character is not proficient in gains: Jack of All Trades (bard 2nd, half the bonus rounded
    down, any check), Remarkable Athlete (champion 7th, half rounded up, Strength, Dexterity and Constitution)."""
    if has(ch, "Remarkable Athlete", "fighter", 7) and ability in ("strength", "dexterity", "constitution"):
        return math.ceil(_prof(ch.level) / 2), "Remarkable Athlete"
    if has(ch, "Jack of All Trades", "bard", 2):
        return _prof(ch.level) // 2, "Jack of All Trades"
    return 0, ""


def save_bonus(ch: Character) -> tuple[int, str]:
    """Aura of Protection (paladin 6th): the paladin's Charisma modifier (at least +1) on their own saves while
    conscious. (Allies within 10 feet gain it too; the GM adds it to theirs, since the engine keeps no positions.)"""
    if has(ch, "Aura of Protection", "paladin", 6) and ch.hp > 0:
        return max(1, ch.abilities.mod("charisma")), "Aura of Protection"
    return 0, ""


def save_advantage(ch: Character, ability: str) -> list[str]:
    """Danger Sense (barbarian 2nd): advantage on Dexterity saves, unless blinded, deafened or incapacitated."""
    if ability == "dexterity" and has(ch, "Danger Sense", "barbarian", 2) and \
            not {"blinded", "deafened", "incapacitated"} & set(ch.conditions):
        return ["Danger Sense"]
    return []


Against = Literal["poison", "magic", "fear", "charm"]
_SPECIES_SAVES: dict[str, tuple[str, str, tuple[str, ...]]] = {  # species: (against, trait, abilities: () for all)
    "dwarf": ("poison", "Dwarven Resilience", ()),
    "gnome": ("magic", "Gnome Cunning", ("intelligence", "wisdom", "charisma")),
    "halfling": ("fear", "Brave", ()),
    "elf": ("charm", "Fey Ancestry", ()),
    "half-elf": ("charm", "Fey Ancestry", ()),
}


def species_advantage(ch: Character, ability: str, against: str | None) -> list[str]:
    """A species trait's advantage on a save against something: a dwarf's against poison (Dwarven Resilience), a
    gnome's Intelligence, Wisdom and Charisma saves against magic (Gnome Cunning), a halfling's against being
    frightened (Brave), an elf's and half-elf's against being charmed (Fey Ancestry)."""
    found = _SPECIES_SAVES.get(ch.species or "")
    if found is None or against != found[0] or (found[2] and ability not in found[2]):
        return []
    return [found[1]]


def crit_range(ch: Character) -> int:
    """The lowest natural d20 that is a critical hit with a weapon: 19 for a champion at 3rd, 18 at 15th."""
    if ch.char_class == "fighter" and ch.level >= 15:
        return 18
    return 19 if ch.char_class == "fighter" and ch.level >= 3 else 20


def brutal_dice(ch: Character) -> int:
    """Extra weapon dice on a critical melee hit: Brutal Critical (barbarian 9th: 1, 13th: 2, 17th: 3)."""
    if ch.char_class != "barbarian":
        return 0
    return 3 if ch.level >= 17 else 2 if ch.level >= 13 else 1 if ch.level >= 9 else 0


def sneak_dice(ch: Character) -> str | None:
    """Sneak Attack's dice: 1d6 at rogue 1st, one more every odd level."""
    return f"{(ch.level + 1) // 2}d6" if ch.char_class == "rogue" else None


def extra_speed(ch: Character, armoured: bool, heavy: bool, shield: bool) -> int:
    """Fast Movement (barbarian 5th: +10 ft out of heavy armour); Unarmored Movement (monk 2nd: +10 ft, up to +30 at
    18th, without armour or shield)."""
    if ch.char_class == "barbarian" and ch.level >= 5 and not heavy:
        return 10
    if ch.char_class == "monk" and ch.level >= 2 and not armoured and not shield:
        return 10 + 5 * ((ch.level - 2) // 4)
    return 0


def healing_bonus(ch: Character, slot: int | None) -> int:
    """Disciple of Life (the Life cleric): healing spells of 1st level and up heal 2 + the slot's level more."""
    return 2 + slot if ch.char_class == "cleric" and slot else 0


def evasion(ch: Character) -> bool:
    """Evasion (rogue 7th, monk 7th): a Dexterity save for half damage takes none on a success, half on a failure."""
    return ch.char_class in ("rogue", "monk") and ch.level >= 7


def breath_dice(level: int) -> str:
    """A dragonborn's breath: 2d6, 3d6 at 6th level, 4d6 at 11th, 5d6 at 16th."""
    return f"{2 + (level >= 6) + (level >= 11) + (level >= 16)}d6"


def rage_damage(level: int) -> int:
    return 4 if level >= 16 else 3 if level >= 9 else 2


# -- using one ---------------------------------------------------------------------------------------------------

KI_USES = {"flurry of blows": "makes two unarmed strikes as a bonus action",
           "patient defense": "takes the Dodge action as a bonus action",
           "step of the wind": "takes the Disengage or Dash action as a bonus action, and jumps twice as far"}


def rage(ch: Character, heavy_armour: bool) -> str:
    r = resource(ch, "Rage")
    if heavy_armour:
        raise BadInput(f"{ch.name} cannot rage in heavy armour (the SRD).")
    if any(e.spell == "Rage" for e in ch.effects):
        raise BadInput(f"{ch.name} is already raging.")
    spend(ch, r)
    effect = Effect(spell="Rage", caster=ch.name, minutes=1, rounds=10, resist=["bludgeoning", "piercing", "slashing"],
                    melee_damage=rage_damage(ch.level), strength=True, conscious=True)
    effects.put(ch, effect)
    if ch.concentration:
        ch.concentration = None  # no spells, nor concentration on one, while raging
    left = "unlimited" if r.uses(ch) >= 99 else f"{r.left(ch)} left"
    return f"{ch.name} rages: {effects.describe(effect)} ({left})."


def reckless(ch: Character) -> str:
    """Reckless Attack (barbarian 2nd): advantage on Strength melee attacks this turn, and attacks against the
    barbarian have advantage until its next turn begins (an effect of one of its own rounds)."""
    if ch.char_class != "barbarian" or ch.level < 2:
        raise BadInput(f"{ch.name} has no Reckless Attack: it is a barbarian's, from 2nd level.")
    effect = Effect(spell="Reckless Attack", caster=ch.name, minutes=0, rounds=1, reckless=True, exposed=True)
    effects.put(ch, effect)
    return f"{ch.name} attacks recklessly: {effects.describe(effect)}, until their next turn."


def slot_to_points(ch: Character, slot: int, table: dict[int, int]) -> str:
    """Font of Magic the other way: an unspent slot (of `table`, the class's slots at its level) into as many sorcery
    points as its level, never above the maximum."""
    r = resource(ch, "Sorcery Points")
    if ch.slots_spent.get(slot, 0) >= table.get(slot, 0):
        raise BadInput(f"{ch.name} has no level-{slot} slot left to turn into sorcery points.")
    if ch.used.get(r.name, 0) < slot:
        raise BadInput(f"{ch.name} would have more sorcery points than their maximum ({r.uses(ch)}).")
    ch.slots_spent[slot] = ch.slots_spent.get(slot, 0) + 1
    ch.used[r.name] -= slot
    return f"{ch.name} turns a level-{slot} slot into {slot} sorcery points ({r.left(ch)} points now)."


def second_wind(ch: Character, rng: random.Random) -> tuple[str, int]:
    spend(ch, resource(ch, "Second Wind"))
    healed = roll(f"1d10+{ch.level}", rng)
    return f"{ch.name} uses Second Wind: {healed.expression} → {healed.total}.", max(0, healed.total)


def action_surge(ch: Character) -> str:
    r = resource(ch, "Action Surge")
    spend(ch, r)
    return f"{ch.name} uses Action Surge: one more action this turn ({r.left(ch)} left until a short rest)."


def ki(ch: Character, how: str) -> str:
    r = resource(ch, "Ki")
    key = " ".join(how.lower().split())
    if key not in KI_USES:
        raise BadInput(f"Ki is spent on {', '.join(KI_USES)} or stunning strike (option=).")
    spend(ch, r)
    return f"{ch.name} spends 1 ki: {key.title()}, {ch.name} {KI_USES[key]} ({r.left(ch)} ki left)."


def inspiration_die(level: int) -> str:
    return "1d12" if level >= 15 else "1d10" if level >= 10 else "1d8" if level >= 5 else "1d6"


def inspire(ch: Character, ally: object) -> str:
    if ally is ch:
        raise BadInput("Bardic Inspiration goes to someone else, not the bard.")
    r = resource(ch, "Bardic Inspiration")
    spend(ch, r)
    die = inspiration_die(ch.level)
    effect = Effect(spell="Bardic Inspiration", caster=ch.name, minutes=10, rounds=100, attack=die, save=die, check=die,
                    single=True)
    effects.put(ally, effect)  # type: ignore[arg-type]
    return (f"{ch.name} inspires {getattr(ally, 'name', 'them')}: {die} on their next attack roll, save or check "
            f"({r.left(ch)} left).")


def sacred_weapon(ch: Character) -> str:
    r = resource(ch, "Channel Divinity")
    spend(ch, r)
    bonus = str(max(1, ch.abilities.mod("charisma")))
    effect = Effect(spell="Sacred Weapon", caster=ch.name, minutes=1, rounds=10, attack=bonus)
    effects.put(ch, effect)
    return f"{ch.name} channels divinity: {effects.describe(effect)}."


def flexible_casting(ch: Character, slot: int, table: dict[int, int]) -> str:
    """Sorcery points into a spell slot: a spent slot of that level comes back (never beyond `table`, the class's
    slots at the character's level)."""
    if slot not in SLOT_COST:
        raise BadInput("Sorcery points make slots of 1st to 5th level (slot=1..5).")
    if table.get(slot, 0) == 0:
        raise BadInput(f"{ch.name} has no level-{slot} slots to fill.")
    if ch.slots_spent.get(slot, 0) == 0:
        raise BadInput(f"{ch.name}'s level-{slot} slots are all unspent.")
    r = resource(ch, "Sorcery Points")
    spend(ch, r, SLOT_COST[slot])
    ch.slots_spent[slot] -= 1
    return f"{ch.name} turns {SLOT_COST[slot]} sorcery points into a level-{slot} slot ({r.left(ch)} points left)."


def arcane_recovery(ch: Character) -> str:
    """Spent slots back, highest first, worth up to half the wizard's level (rounded up), none of 6th level or more."""
    r = resource(ch, "Arcane Recovery")
    budget = math.ceil(ch.level / 2)
    back: list[int] = []
    for level in sorted((lv for lv, n in ch.slots_spent.items() if n > 0 and lv < 6), reverse=True):
        while ch.slots_spent.get(level, 0) > 0 and level <= budget:
            ch.slots_spent[level] -= 1
            budget -= level
            back.append(level)
    if not back:
        raise BadInput(f"{ch.name} has no spent slots that Arcane Recovery can bring back.")
    spend(ch, r)
    ch.slots_spent = {lv: n for lv, n in ch.slots_spent.items() if n > 0}
    return f"{ch.name} uses Arcane Recovery: {', '.join(f'a level-{lv} slot' for lv in back)} back."


__all__ = ["RESOURCES", "Resource", "action_surge", "arcane_recovery", "breath_dice", "brutal_dice", "crit_range", "evasion",
           "extra_speed", "flexible_casting", "half_proficiency", "healing_bonus", "inspire", "ki", "lines",
           "rage", "rage_damage", "reckless", "recover", "slot_to_points", "resource", "resources", "sacred_weapon", "save_advantage", "save_bonus",
           "second_wind", "sneak_dice", "spend"]
