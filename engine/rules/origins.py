"""Species and background: what they add to a new character (ability increases, skills, gear, coin) and what
the sheet shows of them (speed, size, darkvision, languages, traits, the background's feature)."""

from __future__ import annotations

from ..basics import ABILITIES, Abilities, Item
from ..state import Character
from . import data
from .checks import SKILLS
from .conditions import speed_after
from . import features
from .equipment import armor_class, worn_armor
from .data import Background, ClassData, Species, Trait

MAX_SCORE = 20
DEFAULT_SPECIES = "human"
DEFAULT_SPEED = 30  # a character made before species were kept


def increased(abilities: Abilities, sp: Species, cls: ClassData) -> Abilities:
    """The scores with the species' increases; a free choice (+1 to two abilities, the half-elf's) goes to the
    class's highest priorities among those not already raised. No score passes 20."""
    raise_by = dict(sp.abilities)
    free = [a for a in cls.priorities if a not in raise_by][: sp.choose_abilities]
    raise_by.update({a: 1 for a in free})
    return Abilities(**{a: min(MAX_SCORE, getattr(abilities, a) + raise_by.get(a, 0)) for a in ABILITIES})


def skills(cls: ClassData, sp: Species, bg: Background) -> list[str]:
    """The class's skills, taken from its list in order after those the background and species grant (a skill
    granted twice is replaced, as the SRD allows), then the background's and the species' own, then the
    species' free picks (the half-elf's) from the class's list, then from all skills."""
    granted = [*bg.skills, *(s for s in sp.skills if s not in bg.skills)]
    picks = [s for s in cls.skill_choices if s not in granted][: cls.skills]
    chosen = picks + granted
    free = [s for s in [*cls.skill_choices, *SKILLS] if s not in chosen]
    return chosen + list(dict.fromkeys(free))[: sp.choose_skills]


def equipment(cls: ClassData, bg: Background) -> list[Item]:
    """The class's starting equipment, the background's, and a potion and rations; like items stacked."""
    pack: dict[str, Item] = {}
    for item in [*cls.equipment, *bg.equipment, Item(name="healing potion"), Item(name="rations", quantity=5)]:
        if item.name in pack:
            pack[item.name].quantity += item.quantity
        else:
            pack[item.name] = item.model_copy()
    return list(pack.values())


def species_of(ch: Character) -> Species | None:
    return data.rules().species.get(ch.species) if ch.species else None


def background_of(ch: Character) -> Background | None:
    return data.rules().backgrounds.get(ch.background) if ch.background else None


def speed(ch: Character) -> int:
    """The species' speed, 10 ft less in heavy armour the character is not strong enough for (dwarves excepted), then
    as conditions leave it (halved at exhaustion 2, 0 at 5 or when grappled or restrained)."""
    sp = species_of(ch)
    base = sp.speed if sp else DEFAULT_SPEED
    armour = worn_armor(ch)
    if (armour is not None and armour.category == "heavy" and armour.strength
            and ch.abilities.strength < armour.strength and ch.species != "dwarf"):
        base = max(5, base - 10)
    shield = "shield" in armor_class(ch).source
    base += features.extra_speed(ch, armour is not None, armour is not None and armour.category == "heavy", shield)
    return speed_after(ch.conditions, base)


def languages(ch: Character) -> list[str]:
    """The species' languages and the background's, the free choices filled with common tongues not yet known."""
    sp, bg = species_of(ch), background_of(ch)
    if sp is None:
        return []
    known = list(sp.languages)
    extra = sp.extra_languages + (bg.languages if bg else 0)
    return known + [lang for lang in data.LANGUAGES if lang not in known][:extra]


def traits(ch: Character) -> list[Trait]:
    """The species' traits (with its darkvision) and the background's feature."""
    sp, bg = species_of(ch), background_of(ch)
    found = list(sp.traits) if sp else []
    if sp and sp.darkvision:
        found.insert(0, Trait(name="Darkvision", text=f"Sees in dim light within {sp.darkvision} feet as if bright, "
                                                      f"and in darkness as if dim."))
    if bg:
        found.append(bg.feature)
    return found


def origin(ch: Character) -> str:
    """"human fighter", "hill dwarf cleric": who the character is, in two words or three."""
    sp = species_of(ch)
    return f"{sp.title} {ch.char_class}" if sp else ch.char_class
