"""The SRD 5.1's creatures (engine/rules/data/monsters.yaml, made by engine/rules/srd_import.py): read and checked on
first use (a challenge rating's XP, hit points that are the average of the hit dice, a multiattack that names the
creature's own actions), found by name with the nearest names offered, and turned into the engine's stat blocks.

It sits beside entities.py rather than in rules/ because an enemy of an adventure file or a tool's arguments
(entities.EnemyTemplate) is filled from it while being read, and rules/ stands above the game state."""

from __future__ import annotations

import difflib
import re
from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from .basics import (ABILITIES, BLOCK_DAMAGE, CR_PATTERN, EXTRA_DAMAGE, SKILLS, XP_BY_CR, Abilities, Attack,
                     DamageType, Defences, Model, modifier, slug)
from .errors import BadInput, ConfigError

DATA = Path(__file__).resolve().parent / "rules" / "data"
SIZES = ("tiny", "small", "medium", "large", "huge", "gargantuan")
HIT_DICE = re.compile(r"^(\d{1,2})d(4|6|8|10|12|20)$")
AVERAGE = {4: 2.5, 6: 3.5, 8: 4.5, 10: 5.5, 12: 6.5, 20: 10.5}
# The traits most creatures share, said briefly in our words (the GM and /lookup read them).
TRAITS = {
    "Magic Resistance": "advantage on saves against spells and other magical effects",
    "Amphibious": "breathes air and water",
    "Legendary Resistance": "can choose to succeed on a failed save, a few times a day",
    "Shapechanger": "can change its form",
    "Keen Smell": "advantage on Perception checks that rely on smell",
    "Keen Hearing and Smell": "advantage on Perception checks that rely on hearing or smell",
    "Keen Hearing": "advantage on Perception checks that rely on hearing",
    "Keen Sight": "advantage on Perception checks that rely on sight",
    "Keen Hearing and Sight": "advantage on Perception checks that rely on hearing or sight",
    "Pack Tactics": "advantage on an attack when an ally of it is within 5 ft of the target and not incapacitated",
    "False Appearance": "looks like an ordinary object while it stays still",
    "Spider Climb": "climbs any surface, ceilings too, without a check",
    "Magic Weapons": "its weapon attacks are magical",
    "Charge": "moving 20 ft or more straight at a foe before hitting adds damage and may knock it prone",
    "Pounce": "moving 20 ft or more straight at a foe before hitting may knock it prone, then a bonus attack",
    "Swarm": "a mass of tiny creatures: it moves through others' spaces and cannot heal or gain hit points by magic",
    "Water Breathing": "breathes only underwater",
    "Hold Breath": "holds its breath for a long time",
    "Sunlight Sensitivity": "disadvantage on attacks and sight-based Perception in sunlight",
    "Web Walker": "ignores the movement limits of webs",
    "Web Sense": "knows where anything touching its web is",
    "Regeneration": "regains hit points at the start of its turn unless certain damage stopped it",
    "Devil's Sight": "magical darkness does not hinder its sight",
    "Echolocation": "cannot use blindsight while deafened",
    "Relentless": "once per rest, damage that would drop it to 0 leaves it at 1 hit point instead",
    "Blood Frenzy": "advantage on melee attacks against a creature below its hit point maximum",
    "Standing Leap": "jumps far without a running start",
    "Siege Monster": "double damage to objects and structures",
    "Incorporeal Movement": "moves through creatures and objects as difficult terrain",
    "Amorphous": "squeezes through a space as narrow as an inch",
    "Sure-Footed": "advantage on saves against being knocked prone",
    "Flyby": "provokes no opportunity attack when it flies out of reach",
    "Nimble Escape": "can Disengage or Hide as a bonus action",
    "Aggressive": "can move toward a foe it sees as a bonus action",
    "Undead Fortitude": "damage that drops it to 0 may leave it at 1 hit point instead (a CON save; not radiant or a critical)",
    "Turn Resistance": "advantage on saves against turning undead",
    "Innate Spellcasting": "casts some spells without components",
    "Spellcasting": "casts spells like a character of its class",
}
MAX_ACTIONS = 8  # a stat block's attacks the engine rolls (EnemyTemplate's bound)


class MonsterAttack(Model):
    name: str = Field(min_length=1, max_length=40)
    bonus: int = Field(ge=-5, le=30)
    damage: str = Field(pattern=BLOCK_DAMAGE)
    type: DamageType  # type: ignore[valid-type]
    reach: str = Field("", max_length=40)
    plus: str = Field("", pattern=f"^$|{EXTRA_DAMAGE}")
    rider: str = Field("", max_length=80)

    def attack(self) -> Attack:
        return Attack(name=self.name, bonus=self.bonus, damage=self.damage, damage_type=self.type,
                      reach=self.reach, plus=self.plus, rider=self.rider)


class Special(Model):
    """An action that is not an attack roll: a breath, a gaze, a frightful presence (a save against a DC)."""

    name: str = Field(min_length=1, max_length=60)
    save: Literal[ABILITIES] | None = None  # type: ignore[valid-type]
    dc: int | None = Field(None, ge=1, le=40)
    damage: str | None = Field(None, pattern=BLOCK_DAMAGE)
    type: DamageType | None = None  # type: ignore[valid-type]
    half: bool = False  # half damage on a successful save
    area: str = Field("", max_length=60)
    use: str = Field("", max_length=30)  # "recharge 5-6", "1/day"

    def line(self) -> str:
        parts = [self.name + (f" ({self.use})" if self.use else "")]
        if self.save and self.dc:
            parts.append(f"DC {self.dc} {self.save[:3].upper()} save")
        if self.damage:
            parts.append(f"{self.damage} {self.type or ''}".strip() + (", half on a success" if self.half else ""))
        if self.area:
            parts.append(self.area)
        return ": ".join(parts[:1]) + (": " + ", ".join(parts[1:]) if len(parts) > 1 else "")


class Monster(Model):
    name: str = Field(min_length=1, max_length=60)
    size: Literal[SIZES]  # type: ignore[valid-type]
    type: str = Field(min_length=1, max_length=40)
    tags: str = Field("", max_length=60)
    alignment: str = Field("", max_length=60)
    ac: int = Field(ge=1, le=30)
    armor: str = Field("", max_length=80)
    hp: int = Field(ge=1, le=1000)
    hit_dice: str = Field(pattern=HIT_DICE.pattern)
    speed: dict[str, int]
    scores: list[int] = Field(min_length=6, max_length=6)
    saves: dict[str, int] = Field(default_factory=dict)
    skills: dict[str, int] = Field(default_factory=dict)
    resist: list[DamageType] = Field(default_factory=list)  # type: ignore[valid-type]
    immune: list[DamageType] = Field(default_factory=list)  # type: ignore[valid-type]
    vulnerable: list[DamageType] = Field(default_factory=list)  # type: ignore[valid-type]
    resist_nonmagical: list[DamageType] = Field(default_factory=list)  # type: ignore[valid-type]
    immune_nonmagical: list[DamageType] = Field(default_factory=list)  # type: ignore[valid-type]
    defence_notes: list[str] = Field(default_factory=list)
    condition_immunities: list[str] = Field(default_factory=list)
    senses: dict[str, int] = Field(default_factory=dict)
    languages: str = ""
    cr: str = Field(pattern=CR_PATTERN)
    xp: int = Field(ge=0)
    traits: list[str] = Field(default_factory=list)
    multiattack: list[dict[str, int | str]] = Field(default_factory=list)
    multiattack_or: list[list[dict[str, int | str]]] = Field(default_factory=list)  # other plans to choose from
    attacks: list[MonsterAttack] = Field(default_factory=list)
    specials: list[Special] = Field(default_factory=list)
    reactions: list[str] = Field(default_factory=list)
    legendary: list[str] = Field(default_factory=list)

    @field_validator("saves")
    @classmethod
    def _saves(cls, value: dict[str, int]) -> dict[str, int]:
        wrong = [k for k in value if k not in ABILITIES]
        if wrong:
            raise ValueError(f"{', '.join(wrong)}: not an ability")
        return value

    @field_validator("skills")
    @classmethod
    def _skills(cls, value: dict[str, int]) -> dict[str, int]:
        wrong = [k for k in value if k.replace("-", " ") not in SKILLS]
        if wrong:
            raise ValueError(f"{', '.join(wrong)}: not a skill")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Monster:
        allowed = {0, 10} if self.cr == "0" else {XP_BY_CR[self.cr]}  # the SRD gives some CR 0 creatures 0 XP
        if self.xp not in allowed:
            raise ValueError(f"{self.name}: CR {self.cr} is worth {XP_BY_CR[self.cr]} XP, not {self.xp}")
        count, die = (int(x) for x in HIT_DICE.fullmatch(self.hit_dice).groups())  # type: ignore[union-attr]
        average = int(count * AVERAGE[die]) + count * modifier(self.scores[2])
        if self.hp != max(1, average):
            raise ValueError(f"{self.name}: {self.hit_dice} with CON {self.scores[2]} averages {average} HP, "
                             f"not {self.hp}")
        def bare(name: str) -> str:  # "Claw (Oni Form Only)" and "Claws" are the claw
            return re.sub(r"\s*\(.*?\)", "", name).lower().removesuffix("s")

        own = {bare(a.name) for a in self.attacks} | {bare(s.name) for s in self.specials} | {bare(t) for t in self.traits}
        for step in [s for plan in [self.multiattack, *self.multiattack_or] for s in plan]:
            for name in step:
                if bare(name) not in own:
                    raise ValueError(f"{self.name}: its multiattack names '{name}', which is none of its actions")
        return self

    def abilities(self) -> Abilities:
        return Abilities(**dict(zip(ABILITIES, self.scores)))

    def defences(self) -> Defences | None:
        if not (self.resist or self.immune or self.vulnerable or self.resist_nonmagical or self.immune_nonmagical):
            return None
        return Defences(resistances=self.resist, immunities=self.immune, vulnerabilities=self.vulnerable,
                        nonmagical_resistances=self.resist_nonmagical, nonmagical_immunities=self.immune_nonmagical)

    def actions(self) -> list[Attack]:
        return [a.attack() for a in self.attacks[:MAX_ACTIONS]]

    def save_bonus(self, ability: str) -> int:
        """Its saving throw with `ability`: the stat block's proficient save, else the ability modifier."""
        return self.saves.get(ability, modifier(self.scores[ABILITIES.index(ability)]))

    def speed_text(self) -> str:
        return ", ".join(f"{n} ft" if kind == "walk" else "hover" if kind == "hover" else f"{kind} {n} ft"
                         for kind, n in self.speed.items())

    def multiattack_text(self) -> str:
        def plan(steps: list[dict[str, int | str]]) -> str:
            return ", ".join(f"{n} × {name}" if isinstance(n, int) else f"{name} ({n})" for step in steps
                             for name, n in step.items())
        return " or ".join(plan(p) for p in [self.multiattack, *self.multiattack_or] if p)

    def block(self) -> list[str]:
        """Its stat block, a line each, as the GM and /lookup show it."""
        kind = self.type + (f" ({self.tags})" if self.tags else "")
        lines = [f"{self.name}: {self.size} {kind}, {self.alignment}. CR {self.cr} ({self.xp} XP).",
                 f"AC {self.ac}{f' ({self.armor})' if self.armor else ''}, HP {self.hp} ({self.hit_dice}), "
                 f"speed {self.speed_text()}.",
                 " ".join(f"{a[:3].upper()} {s} ({modifier(s):+d})" for a, s in zip(ABILITIES, self.scores))]
        if self.saves:
            lines.append("Saves: " + ", ".join(f"{a[:3].upper()} {b:+d}" for a, b in self.saves.items()))
        if self.skills:
            lines.append("Skills: " + ", ".join(f"{k.replace('-', ' ')} {b:+d}" for k, b in self.skills.items()))
        for label, types in (("Resists", self.resist), ("Immune to", self.immune), ("Vulnerable to", self.vulnerable),
                             ("Resists from nonmagical weapons", self.resist_nonmagical),
                             ("Immune from nonmagical weapons", self.immune_nonmagical),
                             ("Cannot be", self.condition_immunities)):
            if types:
                lines.append(f"{label}: {', '.join(types)}")
        senses = ", ".join(f"{k.replace('_', ' ')} {v}{' ft' if k != 'passive_perception' else ''}"
                           for k, v in self.senses.items())
        if senses:
            lines.append(f"Senses: {senses}")
        if self.traits:
            lines.append("Traits: " + "; ".join(f"{t} ({TRAITS[t]})" if t in TRAITS else t for t in self.traits))
        if self.multiattack:
            lines.append("Multiattack: " + self.multiattack_text())
        lines += [a.attack().line() for a in self.attacks]
        lines += [s.line() for s in self.specials]
        if self.legendary:
            lines.append("Legendary actions: " + ", ".join(self.legendary))
        return lines


@cache
def bestiary() -> dict[str, Monster]:
    """Every SRD creature by its id ("adult-red-dragon"), read and checked once."""
    path = DATA / "monsters.yaml"
    try:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)  # noqa: S506 (a safe loader)
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"Cannot read the bestiary {path}: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"The bestiary {path} must map creature ids to stat blocks")
    table = {}
    for key, entry in raw.items():
        try:
            table[key] = Monster.model_validate(entry)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ConfigError(f"The bestiary {path} is wrong at {key}.{where}: {first['msg']}") from exc
    return table


@cache
def _names() -> dict[str, str]:
    table = bestiary()
    names = {slug(m.name): key for key, m in table.items()}
    names.update({key: key for key in table})
    # A creature of several forms ("Werewolf, Hybrid Form") is also found by its own name: the form it fights in.
    for key, m in table.items():
        base, _, form = m.name.partition(", ")
        if form and (slug(base) not in names or "hybrid" in form.lower()):
            names[slug(base)] = key
    return names


def find(name: str) -> Monster | None:
    """The creature by its name or id; a plural finds it too ("goblins", "wolves", "giant spiders")."""
    wanted, names = slug(name), _names()
    for key in (wanted, wanted.removesuffix("s"), wanted.removesuffix("es"), re.sub(r"ves$", "f", wanted)):
        if key in names:
            return bestiary()[names[key]]
    return None


def monster(name: str) -> Monster:
    """The creature called `name` (case, spacing and hyphens ignored), or BadInput naming the nearest."""
    found = find(name)
    if found is not None:
        return found
    close = nearest(name)
    hint = f" Nearest: {', '.join(close)}." if close else ""
    raise BadInput(f"There is no SRD creature called '{name}'.{hint}")


def type_of(name: str | None) -> str | None:
    """The type ("undead", "fiend", "beast") of the SRD creature of that name, or None (no name, or none such)."""
    found = find(name) if name else None
    return found.type if found is not None else None


def nearest(name: str, n: int = 3) -> list[str]:
    table = bestiary()
    keys = difflib.get_close_matches(slug(name), list(_names()), n=n * 2, cutoff=0.6)
    seen: list[str] = []
    for k in keys:
        title = table[_names()[k]].name
        if title not in seen:
            seen.append(title)
    return seen[:n]


def names() -> list[str]:
    return [m.name for m in bestiary().values()]


def stat_fields(name: str) -> dict[str, object]:
    """An enemy's or a person's stat block taken from the SRD creature `name` (BadInput when there is none): what
    an adventure's `{monster: goblin}` or a tool's `{"monster": "goblin"}` stands for."""
    m = monster(name)
    notes = ([f"Multiattack: {m.multiattack_text()}"] if m.multiattack else []) + [s.line() for s in m.specials]
    text = "; ".join(notes)
    return {"name": m.name, "hp": m.hp, "ac": m.ac, "initiative_bonus": modifier(m.scores[1]),
            "speed": m.speed_text()[:60], "abilities": m.abilities(), "actions": m.actions(), "cr": m.cr,
            "defences": m.defences(), "saves": dict(m.saves), "monster": slug(m.name),
            "attacks": text if len(text) <= 300 else text[:297].rsplit(";", 1)[0] + "; …"}
