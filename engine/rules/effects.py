"""Spells that change numbers while they last (SRD 5.1, CC-BY-4.0): Bless and Bane on attack rolls and saves, Shield,
Shield of Faith, Haste, Mage Armor and Barkskin on AC, Faerie Fire and Blur on the attacks against their holder,
Hunter's Mark, Divine Favor and Branding Smite on weapon hits, Hold Person's paralysis with its repeated save.

A spell's `grants` (its data) says what it leaves; casting it puts an Effect (engine/basics.py) on each creature it
affects. Effects end:
- in a fight, when their time is up: counted at the start of each of the caster's turns (Shield's round ends at
  the caster's next turn, Bless's minute after ten of them); a save repeated at the end of the holder's turn ends
  the ones that allow it;
- when the caster's concentration on the spell ends (another spell, a failed Constitution save, falling
  unconscious): `settle` finds and ends them after every change to the game;
- outside a fight time is not counted in rounds, so: a fight's end ends the effects of a minute or less, a short
  rest (an hour) those of an hour or less, a long rest all of them.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterable, Literal

from pydantic import Field

from ..basics import RIDER, SIGNED_DICE, Effect, Model

if TYPE_CHECKING:
    from ..entities import NPC
    from ..state import Character, GameState, Participant

    Holder = Character | NPC | Participant

_DURATION = re.compile(r"(\d+)\s*(round|minute|hour|day)")


class Grant(Model):
    """What a spell leaves on the creatures it affects (or, `to: caster`, on its caster: a quarry's mark)."""

    to: Literal["targets", "caster"] = "targets"
    attack: str | None = Field(None, pattern=SIGNED_DICE)
    save: str | None = Field(None, pattern=SIGNED_DICE)
    dex_save: str | None = Field(None, pattern=f"{SIGNED_DICE}|^advantage$")
    ac: int = Field(0, ge=-5, le=10)
    ac_floor: int | None = Field(None, ge=10, le=25)
    ac_base: int | None = Field(None, ge=10, le=20)
    damage: str | None = Field(None, pattern=RIDER)
    mark: bool = False  # `damage` only on hits against the creature the spell was cast at
    once: bool = False
    exposed: bool = False
    blurred: bool = False
    speed: str | None = Field(None, pattern=r"^(x2|/2|\+\d{1,2})$")
    condition: str | None = Field(None, max_length=40)
    repeat: bool = False  # the holder repeats the spell's save at the end of each of its turns


def minutes(duration: str) -> int:
    """A spell's duration in minutes ("up to 1 minute" → 1, "1 round" → 0, "8 hours" → 480); 1 if it says none."""
    found = _DURATION.search(duration.lower())
    if found is None:
        return 1
    n, unit = int(found.group(1)), found.group(2)
    return {"round": 0, "minute": n, "hour": 60 * n, "day": 1440 * n}[unit] if unit != "round" else 0


def make(spell: str, caster: str, duration: str, concentration: bool, grant: Grant, *, mark: str | None = None,
         dc: int | None = None, save: str | None = None) -> Effect:
    """The Effect a spell's grant puts on one creature."""
    lasting = min(1440, minutes(duration))
    damage = grant.damage
    return Effect(spell=spell, caster=caster, concentration=concentration, minutes=lasting,
                  rounds=max(1, lasting * 10), attack=grant.attack, save=grant.save, dex_save=grant.dex_save,
                  ac=grant.ac, ac_floor=grant.ac_floor, ac_base=grant.ac_base, damage=damage,
                  mark=mark if grant.mark else None, once=grant.once, exposed=grant.exposed, blurred=grant.blurred,
                  speed=grant.speed, condition=grant.condition,
                  repeat=save if grant.repeat else None, dc=dc if grant.repeat else None)  # type: ignore[arg-type]


def describe(e: Effect) -> str:
    """"Bless (+1d4 to attacks and saves; Tamsin's, concentration)"."""
    parts = []
    if e.attack and e.attack == e.save:
        parts.append(f"{_signed(e.attack)} to attacks and saves")
    else:
        parts += [f"{_signed(e.attack)} to attacks"] if e.attack else []
        parts += [f"{_signed(e.save)} to saves"] if e.save else []
    if e.dex_save:
        parts.append("advantage on DEX saves" if e.dex_save == "advantage" else f"{_signed(e.dex_save)} to DEX saves")
    parts += [f"AC {e.ac:+d}"] if e.ac else []
    parts += [f"AC at least {e.ac_floor}"] if e.ac_floor else []
    parts += [f"unarmoured AC {e.ac_base} + DEX"] if e.ac_base else []
    if e.damage:
        on = f"hits on {e.mark}" if e.mark else "weapon hits"
        parts.append(f"+{e.damage} on {'its next' if e.once else ''}{' ' if e.once else ''}{on}")
    parts += ["attacks against it have advantage"] if e.exposed else []
    parts += ["attacks against it have disadvantage"] if e.blurred else []
    if e.speed:
        parts.append({"x2": "speed doubled", "/2": "speed halved"}.get(e.speed, f"speed {e.speed} ft"))
    parts += [e.condition] if e.condition else []
    parts += [f"{_signed(e.check)} to {'one' if e.single else ''}{' ' if e.single else ''}check"
              + ("" if e.single else "s")] if e.check else []
    parts += [f"+{e.melee_damage} Strength melee damage"] if e.melee_damage else []
    parts += [f"resists {', '.join(e.resist)}"] if e.resist else []
    parts += ["advantage on Strength checks and saves"] if e.strength else []
    parts += ["advantage on its Strength melee attacks"] if e.reckless else []
    if e.repeat and e.dc:
        parts.append(f"a DC {e.dc} {e.repeat} save at the end of each of its turns ends it")
    if e.single:
        parts = [p.replace(" to attacks and saves", " to one attack roll or save").replace(" to attacks", " to one attack")
                 for p in parts]
    whose = f"{e.caster}'s" + (", concentration" if e.concentration else "")
    return f"{e.spell} ({'; '.join(parts + [whose])})"


def _signed(dice: str) -> str:
    return dice if dice.startswith("-") else f"+{dice}"


# -- what effects do to the numbers ---------------------------------------------------------------------------------

def roll_terms(holder: object, what: Literal["attack", "save", "check"], ability: str | None = None) -> tuple[str, list[str]]:
    """What the holder's effects add to an attack roll, a save or an ability check ("+1d4-1d4") and why ("Bless
    +1d4"). An effect spent on one roll (Bardic Inspiration, Guidance) is taken off the holder here."""
    terms, why = "", []
    for e in _effects(holder):
        added = [{"attack": e.attack, "save": e.save, "check": e.check}[what]]
        if what == "save" and ability == "dexterity" and e.dex_save not in (None, "advantage"):
            added.append(e.dex_save)
        for dice in added:
            if dice:
                terms += _signed(dice)
                why.append(f"{e.spell} {_signed(dice)}")
        if e.single and any(added):
            take_off(holder, e)  # type: ignore[arg-type]
    return terms, why


def save_advantage(holder: object, ability: str) -> list[str]:
    """The effects that give the holder advantage on this save (Haste: Dexterity; Rage: Strength)."""
    return [e.spell for e in _effects(holder)
            if (ability == "dexterity" and e.dex_save == "advantage") or (ability == "strength" and e.strength)]


def check_advantage(holder: object, ability: str) -> list[str]:
    """The effects that give the holder advantage on this ability's checks (Rage: Strength)."""
    return [e.spell for e in _effects(holder) if ability == "strength" and e.strength]


def resistances(holder: object) -> list[str]:
    """Damage types the holder's effects halve (Rage: bludgeoning, piercing, slashing)."""
    return sorted({t for e in _effects(holder) for t in e.resist})


def melee_damage(holder: object) -> tuple[int, str]:
    """What the holder's effects add to a Strength melee weapon's damage (Rage), and which."""
    found = [(e.melee_damage, e.spell) for e in _effects(holder) if e.melee_damage]
    return sum(n for n, _ in found), ", ".join(name for _, name in found)


def own_advantage(holder: object, strength_melee: bool) -> list[str]:
    """The holder's effects that give its own attack advantage (Reckless Attack: Strength melee attacks)."""
    return [e.spell for e in _effects(holder) if e.reckless and strength_melee]


def against(target: object) -> tuple[list[str], list[str]]:
    """Advantage and disadvantage the target's effects give attacks against it (Faerie Fire, Blur)."""
    effects = _effects(target)
    return ([f"target {e.spell}" for e in effects if e.exposed], [f"target {e.spell}" for e in effects if e.blurred])


def armour(target: object, dexterity: int | None = None, armoured: bool = False) -> tuple[int, str]:
    """The target's AC with its effects, and what they did ("" for nothing): Mage Armor's 13 + DEX when it wears no
    armour (and that is better), Barkskin's floor, then Shield's, Shield of Faith's and Haste's bonuses."""
    ac = int(getattr(target, "ac", 10) or 10)
    why = []
    dex = dexterity if dexterity is not None else _dex(target)
    for e in _effects(target):
        if e.ac_base and not armoured and e.ac_base + dex > ac:
            ac = e.ac_base + dex
            why.append(e.spell)
    for e in _effects(target):
        if e.ac_floor and e.ac_floor > ac:
            ac = e.ac_floor
            why.append(e.spell)
    for e in _effects(target):
        if e.ac:
            ac += e.ac
            why.append(f"{e.spell} {e.ac:+d}")
    return max(1, ac), ", ".join(why)


def target_ac(target: object) -> tuple[int, str]:
    """Anyone's AC as an attack meets it: a character's sheet (unarmoured or not, for Mage Armor), a stat block's."""
    from ..state import Character
    from .equipment import worn_armor

    if isinstance(target, Character):
        return armour(target, armoured=worn_armor(target) is not None)
    return armour(target)


def _dex(target: object) -> int:
    scores = getattr(target, "abilities", None)
    return scores.mod("dexterity") if scores is not None else 0


def riders(attacker: object, target_name: str, *, weapon: bool) -> list[Effect]:
    """The attacker's effects that add damage to this hit: on weapon hits (Divine Favor, Branding Smite), or on any
    hit against its marked quarry (Hunter's Mark)."""
    out = []
    for e in _effects(attacker):
        if not e.damage:
            continue
        if e.mark is not None:
            if e.mark.lower() == target_name.lower() and weapon:
                out.append(e)
        elif weapon:
            out.append(e)
    return out


def speed(holder: object, base: int) -> int:
    for e in _effects(holder):
        if e.speed == "x2":
            base *= 2
        elif e.speed == "/2":
            base //= 2
        elif e.speed:
            base += int(e.speed[1:])
    return base


def _effects(holder: object) -> list[Effect]:
    return list(getattr(holder, "effects", None) or [])


# -- putting effects on and taking them off ---------------------------------------------------------------------------

def put(holder: Holder, effect: Effect) -> str:
    """Put an effect on a creature: the same spell's effects do not add up (the SRD), so a second casting replaces
    the first; a condition it holds the creature in is added."""
    holder.effects[:] = [e for e in holder.effects if e.spell != effect.spell]
    holder.effects.append(effect)
    if effect.condition and effect.condition not in holder.conditions:
        holder.conditions.append(effect.condition)
    return f"{holder.name}: {describe(effect)}."


def take_off(holder: Holder, effect: Effect) -> None:
    """End one effect on its holder: the condition it held goes unless something else still holds it."""
    holder.effects[:] = [e for e in holder.effects if e is not effect]
    if effect.condition and effect.condition in holder.conditions and \
            all(e.condition != effect.condition for e in holder.effects):
        holder.conditions.remove(effect.condition)


def holders(state: GameState) -> Iterable[Holder]:
    """Everyone who can hold an effect: characters, NPCs, and the fight's combatants with their own hit points."""
    yield from state.characters.values()
    yield from state.npcs.values()
    yield from (p for p in state.combat.order if p.hp is not None)


def end_spell(state: GameState, caster: str, spell: str, why: str) -> list[str]:
    """End a caster's spell everywhere (each holder's effect of it), and their concentration on it: one line."""
    ended = []
    for h in holders(state):
        for e in [e for e in h.effects if e.caster == caster and e.spell == spell]:
            take_off(h, e)
            ended.append(h.name)
    ch = state.find_character(caster)
    if ch is not None and ch.concentration == spell:
        ch.concentration = None
    return [f"{spell} ends ({why}) for {', '.join(ended)}."] if ended else []


def settle(state: GameState) -> list[str]:
    """End the effects whose caster no longer concentrates on their spell (a new spell, a failed save, a fall): run
    after every change to the game, so no effect outlives the concentration it hangs on."""
    lapsed: set[tuple[str, str]] = set()
    for h in holders(state):
        for e in h.effects:
            if not e.concentration:
                continue
            ch = state.find_character(e.caster)
            if ch is not None and (ch.concentration != e.spell or ch.dead):
                lapsed.add((e.caster, e.spell))
    lines = []
    for caster, spell in sorted(lapsed):
        lines += end_spell(state, caster, spell, f"{caster}'s concentration is broken")
    for h in holders(state):  # Rage ends when its holder drops
        for e in [e for e in h.effects if e.conscious and (h.hp or 0) <= 0]:
            take_off(h, e)
            lines.append(f"{e.spell} ends: {h.name} has dropped.")
    return lines


def start_of_turn(state: GameState, name: str) -> list[str]:
    """A combatant's turn begins: its spells' time runs one round shorter (Shield ends now, Bless after ten)."""
    lines, done = [], set()
    for h in holders(state):
        for e in h.effects:
            if e.caster.lower() == name.lower() and (e.spell not in done):
                e.rounds -= 1
                if e.rounds <= 0:
                    done.add(e.spell)
    for spell in sorted(done):
        lines += end_spell(state, name, spell, "its time is up")
    return lines


def after_fight(state: GameState) -> list[str]:
    """A fight is over: spells of a minute or less are over with it."""
    short = sorted({(e.caster, e.spell) for h in holders(state) for e in h.effects if e.minutes <= 1})
    lines = []
    for caster, spell in short:
        lines += end_spell(state, caster, spell, "the fight is over, and its time with it")
    return lines


def after_rest(state: GameState, ch: Character, long: bool) -> list[str]:
    """A rest ends the spells on the resting character, and those they cast, that last no longer than it (an hour for
    a short rest; any for a long one)."""
    longest = 1440 if long else 60
    gone = sorted({(e.caster, e.spell) for e in ch.effects if e.minutes <= longest}
                  | {(e.caster, e.spell) for h in holders(state) for e in h.effects
                     if e.caster == ch.name and e.minutes <= longest})
    lines = []
    for caster, spell in gone:
        lines += end_spell(state, caster, spell, "the rest outlasts it")
    return lines


def used_once(effect: Effect, state: GameState) -> list[str]:
    """A one-hit effect (Branding Smite) has landed: it ends, and the caster's concentration with it."""
    if not effect.once:
        return []
    return end_spell(state, effect.caster, effect.spell, "its hit has landed")


__all__ = ["Grant", "after_fight", "after_rest", "against", "armour", "check_advantage", "melee_damage", "resistances", "describe", "end_spell", "make",
           "minutes", "own_advantage", "put", "riders", "roll_terms", "save_advantage", "settle", "speed", "start_of_turn", "take_off", "target_ac",
           "used_once"]
