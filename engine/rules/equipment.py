"""What a character carries, as the rules read it: armour class from the armour in the pack (or a class's
unarmoured defence), the weapons carried and whether the character is proficient with them."""

from __future__ import annotations

from dataclasses import dataclass

from ..state import Character
from . import choices, data
from .data import Weapon


@dataclass(frozen=True)
class ArmorClass:
    value: int
    source: str  # "chain mail, shield", "unarmoured defence", "no armour"

    def describe(self) -> str:
        return f"{self.value} ({self.source})"


def armor_class(ch: Character) -> ArmorClass:
    """The best AC the pack allows: each body armour carried (or none, or the class's unarmoured defence), plus a
    shield when one is carried and the formula allows it."""
    dex = ch.abilities.mod("dexterity")
    carried = [a for a in (data.armor(i.name) for i in ch.inventory) if a is not None]
    shield = next((a for a in carried if a.category == "shield"), None)
    # (AC, source, whether a shield adds to it); on a tie the first listed counts
    # Heavy armour takes no DEX at all (chain mail at DEX 8 is 16, not 15); medium takes it up to its cap.
    options = [(a.ac + (0 if a.category == "heavy" else dex if a.dex_cap is None else min(dex, a.dex_cap)), a.name, True)
               for a in carried if a.category != "shield"]
    cls = data.rules().classes.get(ch.char_class)
    if cls is not None and cls.unarmored is not None:
        un = cls.unarmored
        options.append((un.base + dex + sum(ch.abilities.mod(a) for a in un.abilities), "unarmoured defence", un.shield))
    options.append((10 + dex, "no armour", True))
    armoured = {a.name for a in carried if a.category != "shield"}
    defense = choices.style_of(ch) == "defense"
    best = ArmorClass(0, "")
    for value, source, with_shield in options:
        if defense and source in armoured:  # the Defense fighting style: +1 while wearing armour
            value, source = value + 1, f"{source}, defense style"
        if shield is not None and with_shield:
            value, source = value + shield.ac, f"{source}, shield" if source != "no armour" else "shield"
        if value > best.value:
            best = ArmorClass(value, source)
    return best


def worn_armor(ch: Character) -> data.Armor | None:
    """The body armour the character wears: the one its armour class comes from (none: unarmoured)."""
    source = armor_class(ch).source.split(", ")[0]
    return data.armor(source) if source not in ("no armour", "unarmoured defence", "shield") else None


def sync_armor_class(ch: Character, before: ArmorClass) -> None:
    """After the pack changed: the AC follows the armour, unless it was set by hand (an imported sheet's)."""
    if ch.ac == before.value:
        ch.ac = max(1, min(40, armor_class(ch).value))


def carried_weapons(ch: Character) -> list[Weapon]:
    """The weapons in the pack, in the pack's order, each once."""
    found: dict[str, Weapon] = {}
    for item in ch.inventory:
        w = data.weapon(item.name)
        if w is not None:
            found.setdefault(w.name, w)
    return list(found.values())


def proficient(ch: Character, weapon: Weapon) -> bool:
    """Whether the class (or the species) trains the character in this weapon."""
    allowed = set()
    cls = data.rules().classes.get(ch.char_class)
    if cls is not None:
        allowed.update(cls.weapons)
    if ch.species is not None and ch.species in data.rules().species:
        allowed.update(data.rules().species[ch.species].weapons)
    return weapon.category in allowed or weapon.name in allowed
