"""Life and death for player characters (SRD 5.1, CC-BY-4.0): temporary hit points that soak damage first and
never stack; at 0 hit points a character falls unconscious and makes death saving throws (10 or more succeeds;
three successes stabilise, three failures kill; a 1 is two failures, a 20 brings them back with 1 hit point);
damage at 0 is a failure (a critical hit two), and damage of at least their maximum beyond what they had kills
outright; a stable character stops rolling; healing brings anyone not dead back."""

from __future__ import annotations

import random

from ..dice import roll
from ..errors import BadInput
from ..state import Character


def _down(ch: Character) -> None:
    if "unconscious" not in ch.conditions:
        ch.conditions.append("unconscious")
    ch.death_successes = ch.death_failures = 0
    ch.stable = False


def _die(ch: Character, why: str) -> str:
    ch.hp, ch.dead, ch.stable, ch.temp_hp = 0, True, False, 0
    for c in ("unconscious",):
        if c in ch.conditions:
            ch.conditions.remove(c)
    if "dead" not in ch.conditions:
        ch.conditions.append("dead")
    ch.concentration = None
    return f" {ch.name} dies ({why})."


def state_line(ch: Character) -> str:
    """"dying: 1 success, 2 failures", "stable", "dead" or "" (not at 0 HP)."""
    if ch.dead:
        return "dead"
    if ch.hp > 0:
        return ""
    if ch.stable:
        return "stable"
    return (f"dying: {ch.death_successes} success{'es' if ch.death_successes != 1 else ''}, "
            f"{ch.death_failures} failure{'s' if ch.death_failures != 1 else ''}")


def hp_line(ch: Character) -> str:
    """"7/12", "7/12 + 5 temporary", "0/12 (dying: 1 success, 2 failures)", "0/12 (stable)", "0/12 (dead)"."""
    dying = state_line(ch)
    return (f"{ch.hp}/{ch.max_hp}" + (f" + {ch.temp_hp} temporary" if ch.temp_hp else "")
            + (f" ({dying})" if dying else ""))


def damage(ch: Character, amount: int, critical: bool = False) -> str:
    """Apply damage to a player character; the sentence(s) after "takes N damage: HP a/b."."""
    if ch.dead:
        return f" {ch.name} is already dead."
    note = ""
    if ch.temp_hp:
        soaked = min(ch.temp_hp, amount)
        ch.temp_hp -= soaked
        amount -= soaked
        note = f" Temporary hit points take {soaked} ({ch.temp_hp} left)."
    if amount <= 0:
        return note
    if ch.hp > 0:
        beyond = amount - ch.hp
        if beyond < 0:
            ch.hp -= amount
            return note
        ch.hp = 0
        if beyond >= ch.max_hp:
            return note + _die(ch, f"massive damage: {beyond} beyond 0 HP, at least their maximum of {ch.max_hp}")
        if ch.species == "half-orc" and not ch.endured:  # Relentless Endurance: once per long rest
            ch.hp, ch.endured = 1, True
            return note + f" {ch.name} drops to 1 hit point instead (Relentless Endurance, once per long rest)."
        _down(ch)
        broke = f" Concentration on {ch.concentration} ends." if ch.concentration else ""
        ch.concentration = None
        return note + f" {ch.name} falls unconscious and is dying (death saving throws on their turns).{broke}"
    if amount >= ch.max_hp:
        return note + _die(ch, f"{amount} damage at 0 HP, at least their maximum of {ch.max_hp}")
    ch.stable = False
    ch.death_failures = min(3, ch.death_failures + (2 if critical else 1))
    failed = f" A hit at 0 HP is {'two death save failures (a critical)' if critical else 'a death save failure'}."
    if ch.death_failures >= 3:
        return note + failed + _die(ch, "three failed death saves")
    return note + failed + f" ({state_line(ch)})"


def heal(ch: Character, before: int) -> str:
    """After healing raised `ch` from `before` hit points: what changed of their state (none for the living)."""
    if before == 0 and ch.hp > 0:
        ch.death_successes = ch.death_failures = 0
        ch.stable = False
        if "unconscious" in ch.conditions:
            ch.conditions.remove("unconscious")
        return f" {ch.name} regains consciousness."
    return ""


def refuse_if_dead(ch: Character) -> None:
    if ch.dead:
        raise BadInput(f"{ch.name} is dead: no healing or rest brings them back (that takes magic such as "
                       f"Revivify).")


def death_save(ch: Character, rng: random.Random) -> str:
    """One death saving throw (a d20, no modifier) for a dying character."""
    refuse_if_dead(ch)
    if ch.hp > 0:
        raise BadInput(f"{ch.name} is not dying (HP {ch.hp}/{ch.max_hp}): death saves are rolled at 0 HP.")
    if ch.stable:
        raise BadInput(f"{ch.name} is stable: no more death saves until they take damage.")
    rolled = roll("1d20", rng)
    natural = rolled.natural or rolled.total
    head = f"{ch.name} makes a death saving throw: {rolled.describe()}"
    if natural == 20:
        ch.hp = 1
        return head + ", a natural 20: they regain 1 hit point." + heal(ch, 0)
    if natural == 1:
        ch.death_failures = min(3, ch.death_failures + 2)
    elif rolled.total >= 10:
        ch.death_successes += 1
    else:
        ch.death_failures += 1
    if ch.death_failures >= 3:
        return head + ", failure." + _die(ch, "three failed death saves")
    if ch.death_successes >= 3:
        ch.stable = True
        return head + f", success: three successes, {ch.name} is stable (unconscious, no more saves)."
    kind = "two failures (a natural 1)" if natural == 1 else "success" if rolled.total >= 10 else "failure"
    return head + f", {kind} ({state_line(ch)})."


def stabilize(ch: Character) -> str:
    refuse_if_dead(ch)
    if ch.hp > 0:
        raise BadInput(f"{ch.name} is not dying (HP {ch.hp}/{ch.max_hp}).")
    if ch.stable:
        return f"{ch.name} is already stable."
    ch.stable = True
    ch.death_successes = ch.death_failures = 0
    return f"{ch.name} is stable: unconscious at 0 HP, no more death saves; they wake with 1 HP in 1d4 hours, or healed."


def gain_temporary(ch: Character, amount: int) -> str:
    """Temporary hit points do not stack: the higher of what they have and what they gain."""
    if amount <= ch.temp_hp:
        return f"{ch.name} keeps their {ch.temp_hp} temporary hit points (new ones do not add to them)."
    ch.temp_hp = min(1000, amount)
    return f"{ch.name} has {ch.temp_hp} temporary hit points."
