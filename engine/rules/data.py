"""The 5e data written from the SRD 5.1 (CC-BY-4.0) in engine/rules/data/*.yaml: species, backgrounds, classes,
weapons and armour, validated once when first used; a mistake in a file is a ConfigError naming it."""

from __future__ import annotations

import difflib
import re
from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from ..errors import BadInput, ConfigError
from ..basics import ABILITIES, DAMAGE_TYPES, SKILLS, Item, Model

DATA = Path(__file__).resolve().parent / "data"
DICE = re.compile(r"^(\d{1,2}d\d{1,3}|\d{1,2})$")
# The common tongues a character picks extra languages from, in the order the engine picks them.
LANGUAGES = ("Common", "Dwarvish", "Elvish", "Giant", "Gnomish", "Goblin", "Halfling", "Orc", "Draconic", "Celestial",
             "Infernal", "Sylvan")


class Trait(Model):
    name: str = Field(min_length=1, max_length=60)
    text: str = Field(min_length=1, max_length=200)


class Feature(Trait):
    level: int = Field(ge=1, le=20)


def _items(value: object) -> object:
    """"handaxe x2" → an item of two handaxes."""
    if not isinstance(value, list):
        return value
    items = []
    for entry in value:
        if isinstance(entry, str):
            found = re.fullmatch(r"(.+?)(?: x(\d+))?", entry.strip())
            assert found is not None
            entry = {"name": found.group(1), "quantity": int(found.group(2) or 1)}
        items.append(entry)
    return items


def _known(values: list[str], known: tuple[str, ...] | dict, what: str) -> list[str]:
    wrong = [v for v in values if v not in known]
    if wrong:
        raise ValueError(f"{', '.join(wrong)}: not {what}")
    return values


class Species(Model):
    name: str = ""
    variant: str | None = None  # the SRD subrace used (hill dwarf)
    size: Literal["Small", "Medium"]
    speed: int = Field(ge=10, le=60)
    darkvision: int = Field(0, ge=0, le=120)
    abilities: dict[str, int]
    choose_abilities: int = Field(0, ge=0, le=2)
    languages: list[str]
    extra_languages: int = Field(0, ge=0, le=2)
    skills: list[str] = Field(default_factory=list)
    choose_skills: int = Field(0, ge=0, le=2)
    weapons: list[str] = Field(default_factory=list)
    resistances: list[Literal[DAMAGE_TYPES]] = Field(default_factory=list)  # type: ignore[valid-type]  # halved damage
    hp_per_level: int = Field(0, ge=0, le=2)
    traits: list[Trait] = Field(min_length=1)

    @field_validator("abilities")
    @classmethod
    def _abilities(cls, value: dict[str, int]) -> dict[str, int]:
        _known(list(value), ABILITIES, "an ability")
        return value

    @field_validator("skills")
    @classmethod
    def _skills(cls, value: list[str]) -> list[str]:
        return _known(value, SKILLS, "a skill")

    @property
    def title(self) -> str:
        return self.variant or self.name


class Background(Model):
    name: str = ""
    srd: bool = False
    skills: list[str] = Field(min_length=2, max_length=2)
    tools: list[str] = Field(default_factory=list)
    languages: int = Field(0, ge=0, le=2)
    equipment: list[Item] = Field(min_length=1)
    gold: int = Field(ge=0, le=100)
    feature: Trait

    @field_validator("equipment", mode="before")
    @classmethod
    def _equipment(cls, value: object) -> object:
        return _items(value)

    @field_validator("skills")
    @classmethod
    def _skills(cls, value: list[str]) -> list[str]:
        return _known(value, SKILLS, "a skill")


class Weapon(Model):
    name: str = ""
    category: Literal["simple", "martial"]
    kind: Literal["melee", "ranged"]
    damage: str
    type: Literal["bludgeoning", "piercing", "slashing"]
    properties: list[Literal["ammunition", "finesse", "heavy", "light", "loading", "reach", "thrown", "two-handed",
                             "versatile"]] = Field(default_factory=list)
    range: tuple[int, int] | None = None
    versatile: str | None = None
    ammunition: str | None = None

    @field_validator("damage", "versatile")
    @classmethod
    def _dice(cls, value: str | None) -> str | None:
        if value is not None and not DICE.match(value):
            raise ValueError(f"'{value}' is not damage dice like 1d8 or 2d6")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> "Weapon":
        if ("versatile" in self.properties) != (self.versatile is not None):
            raise ValueError("a versatile weapon, and only one, gives its two-handed damage")
        if ("ammunition" in self.properties) != (self.ammunition is not None):
            raise ValueError("an ammunition weapon, and only one, names what it uses up")
        if (("thrown" in self.properties or "ammunition" in self.properties) != (self.range is not None)):
            raise ValueError("thrown and ammunition weapons, and only they, have a range")
        return self

    def has(self, prop: str) -> bool:
        return prop in self.properties


class Armor(Model):
    name: str = ""
    category: Literal["light", "medium", "heavy", "shield"]
    ac: int = Field(ge=1, le=20)
    dex_cap: int | None = Field(ge=0)
    strength: int | None = None
    stealth_disadvantage: bool = False


class Unarmored(Model):
    base: int = Field(ge=10, le=15)
    abilities: list[str] = Field(default_factory=list)
    shield: bool = True  # whether a shield may be carried with it

    @field_validator("abilities")
    @classmethod
    def _abilities(cls, value: list[str]) -> list[str]:
        return _known(value, ABILITIES, "an ability")


class ClassData(Model):
    name: str = ""
    hit_die: Literal[6, 8, 10, 12]
    priorities: tuple[str, ...]
    saves: list[str] = Field(min_length=2, max_length=2)
    skills: int = Field(ge=2, le=4)
    skill_choices: list[str]
    weapons: list[str] = Field(min_length=1)
    armor: list[Literal["light", "medium", "heavy", "shield"]] = Field(default_factory=list)  # what it is trained in
    martial_arts: bool = False  # DEX for its simple melee weapons and shortswords (the monk)
    background: str
    equipment: list[Item] = Field(min_length=1)
    equipment_note: str = ""
    unarmored: Unarmored | None = None
    hp_per_level: int = Field(0, ge=0, le=2)
    subclass: str
    features: list[Feature] = Field(min_length=1)

    @field_validator("equipment", mode="before")
    @classmethod
    def _equipment(cls, value: object) -> object:
        return _items(value)

    @field_validator("priorities")
    @classmethod
    def _priorities(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if sorted(value) != sorted(ABILITIES):
            raise ValueError("priorities list each of the six abilities once")
        return value

    @field_validator("saves")
    @classmethod
    def _saves(cls, value: list[str]) -> list[str]:
        return _known(value, ABILITIES, "an ability")

    @field_validator("skill_choices")
    @classmethod
    def _choices(cls, value: list[str]) -> list[str]:
        return _known(value, SKILLS, "a skill")

    def features_at(self, level: int) -> list[Feature]:
        return [f for f in self.features if f.level == level]

    def features_upto(self, level: int) -> list[Feature]:
        return [f for f in self.features if f.level <= level]


class Rules(Model):
    """Everything in engine/rules/data, checked against itself (every weapon a class or species names exists)."""

    species: dict[str, Species]
    backgrounds: dict[str, Background]
    classes: dict[str, ClassData]
    weapons: dict[str, Weapon]
    armor: dict[str, Armor]

    @model_validator(mode="after")
    def _named(self) -> "Rules":
        for table in (self.species, self.backgrounds, self.classes, self.weapons, self.armor):
            for key, entry in table.items():
                entry.name = key
        proficiencies = {"simple", "martial", *self.weapons}
        for cls in self.classes.values():
            _known(cls.weapons, proficiencies, f"a weapon ({cls.name})")
            if cls.background not in self.backgrounds:
                raise ValueError(f"{cls.name}: background '{cls.background}' is not in backgrounds.yaml")
            if len(cls.skill_choices) < cls.skills + 2:
                raise ValueError(f"{cls.name}: too few skill choices to replace ones granted twice")
        for sp in self.species.values():
            _known(sp.weapons, self.weapons, f"a weapon ({sp.name})")
        return self


def _read(name: str) -> object:
    path = DATA / f"{name}.yaml"
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"Cannot read the rules data {path}: {exc}") from exc


@cache
def rules() -> Rules:
    """The rules data, read and validated on first use (the files ship inside the package)."""
    equipment = _read("equipment")
    assert isinstance(equipment, dict)
    raw = {"species": _read("species"), "backgrounds": _read("backgrounds"), "classes": _read("classes"),
           "weapons": equipment.get("weapons"), "armor": equipment.get("armor")}
    try:
        return Rules.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"The rules data in {DATA} is wrong at {where}: {first['msg']}") from exc


def lookup(table: dict[str, Model], name: str, what: str, aliases: dict[str, str] | None = None) -> str:
    """The key of `name` in a table (case and spacing ignored; a subrace or an alias finds its entry), or BadInput
    with the closest names."""
    key = " ".join(name.strip().lower().replace("_", " ").split())
    key = (aliases or {}).get(key, key)
    if key in table:
        return key
    close = difflib.get_close_matches(key, list(table), n=1, cutoff=0.6)
    hint = f" Did you mean {close[0]}?" if close else ""
    raise BadInput(f"'{name}' is not {what} I know.{hint} Choose one of: {', '.join(table)}.")


def species(name: str) -> Species:
    table = rules().species
    variants = {s.variant: key for key, s in table.items() if s.variant}
    return table[lookup(table, name, "a species", variants | {"half elf": "half-elf", "half orc": "half-orc"})]


def background(name: str) -> Background:
    return rules().backgrounds[lookup(rules().backgrounds, name, "a background")]


def weapon(name: str) -> Weapon | None:
    """A weapon by name (an item in a pack), or None when it is not one."""
    key = " ".join(name.strip().lower().split())
    table = rules().weapons
    return table.get(key) or table.get(key.removesuffix("s")) or table.get(key.replace("-", " "))


def armor(name: str) -> Armor | None:
    """Armour or a shield by name: "chain mail", "leather armour", "leather" (None: not armour)."""
    key = " ".join(name.strip().lower().replace("armour", "armor").split())
    table = rules().armor
    return table.get(key) or table.get(f"{key} armor") or table.get(key.removesuffix("s"))
