"""The small values every part of the game is made of: agents, abilities, coins and prices, items and attacks."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, PositiveInt, model_validator

ABILITIES = ("strength", "dexterity", "constitution", "intelligence", "wisdom", "charisma")
COINS = ("cp", "sp", "gp", "pp")
COIN_VALUE = {"cp": 1, "sp": 10, "gp": 100, "pp": 1000}  # in copper, at 5e rates
CR_PATTERN = r"^(0|1/8|1/4|1/2|[1-9]|[12][0-9]|30)$"  # a challenge rating, as the SRD writes it


class AgentType(StrEnum):
    PLAYER = "player"
    NARRATIVE = "narrative"
    COMBAT = "combat"
    NPC = "npc"
    SUMMARIZER = "summarizer"
    REFEREE = "referee"
    PLANNER = "planner"
    PERSONA = "persona"
    WORLDBUILDER = "worldbuilder"


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def slug(text: str) -> str:
    """An id made from a name: lowercase words (of any script) joined by hyphens."""
    return re.sub(r"[\W_]+", "-", text.casefold()).strip("-")


def same_slug(a: str, b: str) -> bool:
    sa = slug(a)
    return bool(sa) and sa == slug(b)


def modifier(score: int) -> int:
    return (score - 10) // 2


# The experience points a character needs for each level, 1 to 20 (SRD 5.1, "Character Advancement").
XP_THRESHOLDS = (0, 300, 900, 2700, 6500, 14000, 23000, 34000, 48000, 64000, 85000, 100000, 120000, 140000, 165000,
                 195000, 225000, 265000, 305000, 355000)


# The skills and the ability each uses (SRD 5.1); engine/rules/checks.py rolls them.
SKILLS: dict[str, str] = {
    "acrobatics": "dexterity", "animal handling": "wisdom", "arcana": "intelligence", "athletics": "strength",
    "deception": "charisma", "history": "intelligence", "insight": "wisdom", "intimidation": "charisma",
    "investigation": "intelligence", "medicine": "wisdom", "nature": "intelligence", "perception": "wisdom",
    "performance": "charisma", "persuasion": "charisma", "religion": "intelligence", "sleight of hand": "dexterity",
    "stealth": "dexterity", "survival": "wisdom",
}

# What defeating a creature of each challenge rating is worth (the SRD's table).
XP_BY_CR = {"0": 10, "1/8": 25, "1/4": 50, "1/2": 100, "1": 200, "2": 450, "3": 700, "4": 1100, "5": 1800, "6": 2300,
            "7": 2900, "8": 3900, "9": 5000, "10": 5900, "11": 7200, "12": 8400, "13": 10000, "14": 11500,
            "15": 13000, "16": 15000, "17": 18000, "18": 20000, "19": 22000, "20": 25000, "21": 33000, "22": 41000,
            "23": 50000, "24": 62000, "25": 75000, "26": 90000, "27": 105000, "28": 120000, "29": 135000,
            "30": 155000}


def xp_for(level: int) -> int:
    """The XP at which a character reaches `level` (1 to 20)."""
    return XP_THRESHOLDS[max(1, min(level, 20)) - 1]


class Abilities(Model):
    strength: int = Field(10, ge=1, le=30)
    dexterity: int = Field(10, ge=1, le=30)
    constitution: int = Field(10, ge=1, le=30)
    intelligence: int = Field(10, ge=1, le=30)
    wisdom: int = Field(10, ge=1, le=30)
    charisma: int = Field(10, ge=1, le=30)

    def mod(self, ability: str) -> int:
        return modifier(getattr(self, ability))


class Item(Model):
    name: str = Field(min_length=1, max_length=80)
    quantity: PositiveInt = 1


class Currency(Model):
    cp: NonNegativeInt = 0
    sp: NonNegativeInt = 0
    gp: NonNegativeInt = 0
    pp: NonNegativeInt = 0

    def describe(self) -> str:
        parts = [f"{getattr(self, c)} {c}" for c in reversed(COINS) if getattr(self, c)]
        return ", ".join(parts) or "no coin"

    def total_cp(self) -> int:
        return sum(getattr(self, c) * COIN_VALUE[c] for c in COINS)

    def pay(self, coin: str, amount: int) -> list[str]:
        """Take `amount` of `coin`, using other coins and making change at 5e rates when that coin runs short.

        Returns what was broken or used besides the coin itself (empty when the coin sufficed). The caller checks
        first that the purse holds enough in all (total_cp).
        """
        cost = amount * COIN_VALUE[coin]
        assert cost <= self.total_cp()
        notes: list[str] = []
        use = min(getattr(self, coin), amount)
        setattr(self, coin, getattr(self, coin) - use)
        cost -= use * COIN_VALUE[coin]
        smaller = [c for c in reversed(COINS) if COIN_VALUE[c] < COIN_VALUE[coin]]
        larger = [c for c in COINS if COIN_VALUE[c] > COIN_VALUE[coin]]
        # Small change first, as a buyer would (only what divides evenly); then break the smallest larger coins,
        # taking change back; then whatever small coins are left, if the larger ones could not cover the rest.
        for coins, verb, whole in ((smaller, "pays", True), (larger, "breaks", False), (smaller, "pays", False)):
            for c in coins:
                if cost <= 0:
                    break
                take = min(getattr(self, c), cost // COIN_VALUE[c] if whole else -(-cost // COIN_VALUE[c]))
                if take:
                    setattr(self, c, getattr(self, c) - take)
                    cost -= take * COIN_VALUE[c]
                    notes.append(f"{verb} {take} {c}")
        if cost < 0:  # change, in the largest coins that fit
            change = -cost
            given = []
            for c in reversed(COINS):
                n, change = divmod(change, COIN_VALUE[c])
                if n:
                    setattr(self, c, getattr(self, c) + n)
                    given.append(f"{n} {c}")
            notes.append(f"gets {', '.join(given)} in change")
        return notes


class Price(Model):
    """An amount of one coin; adventure files write it `50 gp`, `5 sp` or `2 cp` (a bare number is gold)."""

    amount: NonNegativeInt
    coin: Literal["cp", "sp", "gp", "pp"] = "gp"

    @model_validator(mode="before")
    @classmethod
    def _written(cls, value: object) -> object:
        if isinstance(value, int) and not isinstance(value, bool):
            return {"amount": value, "coin": "gp"}
        if isinstance(value, str):
            m = re.fullmatch(r"\s*(-?\d{1,9})\s*(cp|sp|gp|pp)?\s*", value.lower())
            if m is None:
                raise ValueError(f"a price is a whole number and a coin, like '5 gp' or '8 sp' (got {value!r})")
            return {"amount": int(m[1]), "coin": m[2] or "gp"}
        return value

    def cp(self) -> int:
        return self.amount * COIN_VALUE[self.coin]

    def __str__(self) -> str:
        return f"{self.amount} {self.coin}"


def coins_worth(cp: int) -> str:
    """A sum in copper as a buyer would say it: "2 gp 5 sp", "7 cp", "nothing"."""
    parts = []
    for coin in ("gp", "sp", "cp"):
        n, cp = divmod(cp, COIN_VALUE[coin])
        if n:
            parts.append(f"{n} {coin}")
    return " ".join(parts) or "nothing"


DAMAGE_TYPES = ("acid", "bludgeoning", "cold", "fire", "force", "lightning", "necrotic", "piercing", "poison",
                "psychic", "radiant", "slashing", "thunder")
DAMAGE_DICE = r"^\s*\d{0,2}d\d{1,3}(\s*[+-]\s*\d{1,3})?\s*$"
# A stat block's damage: dice, or a flat number (a bat's bite does 1 piercing).
BLOCK_DAMAGE = r"^\s*(\d{0,2}d\d{1,3}(\s*[+-]\s*\d{1,3})?|\d{1,3})\s*$"
EXTRA_DAMAGE = r"^\d{0,2}d\d{1,3}([+-]\d{1,3})? (acid|bludgeoning|cold|fire|force|lightning|necrotic|piercing|poison|psychic|radiant|slashing|thunder)$"


DamageType = Literal[DAMAGE_TYPES]  # type: ignore[valid-type]
Ability = Literal[ABILITIES]  # type: ignore[valid-type]


class Defences(Model):
    """Damage types a creature resists (half), is immune to (none) or vulnerable to (double)."""

    resistances: list[DamageType] = Field(default_factory=list)  # type: ignore[valid-type]
    immunities: list[DamageType] = Field(default_factory=list)  # type: ignore[valid-type]
    vulnerabilities: list[DamageType] = Field(default_factory=list)  # type: ignore[valid-type]
    # Types resisted, or ignored, only when they come from a nonmagical weapon (a werewolf's hide, a devil's).
    nonmagical_resistances: list[DamageType] = Field(default_factory=list)  # type: ignore[valid-type]
    nonmagical_immunities: list[DamageType] = Field(default_factory=list)  # type: ignore[valid-type]


class Attack(Model):
    """One attack of a stat block: the engine rolls its to-hit and damage when the creature attacks with it."""

    name: str = Field(min_length=1, max_length=40)
    bonus: int = Field(ge=-5, le=30)  # to hit
    damage: str = Field(min_length=1, max_length=40, pattern=BLOCK_DAMAGE)
    damage_type: Literal[DAMAGE_TYPES] = "bludgeoning"  # type: ignore[valid-type]
    reach: str = Field("", max_length=40)  # "5 ft." or "range 30/120 ft.", for the GM
    plus: str = Field("", max_length=40, pattern=f"^$|{EXTRA_DAMAGE}")  # more damage of another type: "2d6 fire"
    rider: str = Field("", max_length=80)  # what a hit also calls for, for the GM: "DC 11 STR save or prone"

    def line(self) -> str:
        plus = f" plus {self.plus}" if self.plus else ""
        rider = f"; on a hit, {self.rider}" if self.rider else ""
        return (f"{self.name} {self.bonus:+d} to hit{', ' + self.reach if self.reach else ''}, {self.damage} "
                f"{self.damage_type}{plus}{rider}")


# Extra damage on a hit: "1d6" (of the weapon's own type) or "1d4 radiant".
RIDER = r"^\d{0,2}d\d{1,3}( (acid|bludgeoning|cold|fire|force|lightning|necrotic|piercing|poison|psychic|radiant|slashing|thunder))?$"
SIGNED_DICE = r"^-?(\d{1,2}d\d{1,2}|\d{1,2})$"  # what a spell adds to a roll: 1d4, -1d4, 2


class Effect(Model):
    """A spell's lasting change to its holder's numbers (engine/rules/effects.py applies it): Bless's d4 on attacks
    and saves, Shield of Faith's +2 AC, Hunter's Mark's extra d6 on hits against its quarry, Hold Person's paralysis.
    It ends when its time is up, when its caster's concentration on it ends, or at a rest (engine/rules/effects.py)."""

    spell: str = Field(min_length=1, max_length=40)
    caster: str = Field(min_length=1, max_length=60)  # the caster's name: their concentration ending ends it
    concentration: bool = False
    minutes: int = Field(1, ge=0, le=1440)  # the spell's duration (0: until the start of the caster's next turn)
    rounds: int = Field(1, ge=0, le=14400)  # in a fight: the caster's turns left before it ends
    attack: str | None = Field(None, pattern=SIGNED_DICE)  # added to the holder's attack rolls
    save: str | None = Field(None, pattern=SIGNED_DICE)  # added to the holder's saving throws
    dex_save: str | None = Field(None, pattern=f"{SIGNED_DICE}|^advantage$")  # to its Dexterity saves only
    ac: int = Field(0, ge=-5, le=10)  # added to its AC
    ac_floor: int | None = Field(None, ge=10, le=25)  # its AC is at least this (Barkskin)
    ac_base: int | None = Field(None, ge=10, le=20)  # unarmoured, its AC is this + DEX (Mage Armor)
    damage: str | None = Field(None, pattern=RIDER)  # added to each of the holder's weapon hits
    mark: str | None = Field(None, max_length=60)  # only hits on this creature get `damage` (Hunter's Mark)
    once: bool = False  # `damage` comes with the next hit only, then the effect ends (Branding Smite)
    exposed: bool = False  # attacks against the holder have advantage (Faerie Fire)
    blurred: bool = False  # attacks against the holder have disadvantage (Blur)
    speed: str | None = Field(None, pattern=r"^(x2|/2|\+\d{1,2})$")  # doubled, halved or raised
    condition: str | None = Field(None, max_length=40)  # a condition it holds the holder in (Hold Person)
    repeat: Ability | None = None  # the save the holder repeats at the end of each of its turns to end it
    dc: int | None = Field(None, ge=1, le=40)
    check: str | None = Field(None, pattern=SIGNED_DICE)  # added to the holder's ability checks (Guidance)
    single: bool = False  # spent on the first roll it adds to (Bardic Inspiration, Guidance)
    resist: list[DamageType] = Field(default_factory=list)  # type: ignore[valid-type]  # halved while it lasts (Rage)
    melee_damage: int = Field(0, ge=0, le=10)  # added to the damage of Strength melee weapon hits (Rage)
    strength: bool = False  # advantage on Strength checks and saves (Rage)
    conscious: bool = False  # ends when its holder drops to 0 hit points (Rage)
    reckless: bool = False  # advantage on its own Strength melee attacks (Reckless Attack)


def utcnow() -> datetime:
    return datetime.now(timezone.utc)
