"""Damage by type against a creature's defences (SRD 5.1): resistance halves it (rounded down), vulnerability
doubles it, immunity stops it; a player character resists what their species does (a tiefling fire, a hill dwarf
poison), a creature what its stat block says."""

from __future__ import annotations

from ..basics import Defences
from ..entities import NPC
from ..state import Character, Participant
from . import effects
from .origins import species_of


def defences_of(target: Character | NPC | Participant) -> Defences:
    """The target's defences: a character's species', a creature's stat block's, and what its effects add (Rage)."""
    if isinstance(target, Character):
        species = species_of(target)
        found = Defences(resistances=list(species.resistances) if species else [])
    else:
        found = target.defences or Defences()
    more = [t for t in effects.resistances(target) if t not in found.resistances]
    return found.model_copy(update={"resistances": [*found.resistances, *more]}) if more else found


def adjust(target: Character | NPC | Participant, amount: int, damage_type: str | None,
           weapon: bool = False) -> tuple[int, str]:
    """The damage `target` takes of `amount` of this type, and what its defences did ("" for nothing). `weapon`: it
    comes from a weapon (or a natural one) that is not magical, which some creatures shrug off."""
    if not damage_type or amount <= 0:
        return amount, ""
    d = defences_of(target)
    if damage_type in d.immunities:
        return 0, f"immune to {damage_type}"
    if weapon and damage_type in d.nonmagical_immunities:
        return 0, f"immune to {damage_type} from nonmagical weapons"
    if damage_type in d.resistances:
        return amount // 2, f"resists {damage_type}: {amount} halved"
    if weapon and damage_type in d.nonmagical_resistances:
        return amount // 2, f"resists {damage_type} from nonmagical weapons: {amount} halved"
    if damage_type in d.vulnerabilities:
        return amount * 2, f"vulnerable to {damage_type}: {amount} doubled"
    return amount, ""
