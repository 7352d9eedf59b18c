"""What a world is made of, written in an adventure or made in play: people, places with their secrets and exits,
quests, encounters, items and shops."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, NonNegativeInt, PositiveInt, field_validator, model_validator

from .basics import CR_PATTERN, Abilities, Ability, Attack, Currency, Defences, Effect, Model, Price
from .bestiary import stat_fields
from .errors import BadInput

class PersonaCard(Model):
    speech_style: str = Field("", max_length=400)
    traits: list[str] = Field(default_factory=list, max_length=6)
    background: str = Field("", max_length=800)
    knows: list[str] = Field(default_factory=list, max_length=6)
    example_lines: list[str] = Field(default_factory=list, max_length=4)
    citations: list[str] = Field(default_factory=list, max_length=12)  # lore slice addresses it was drawn from


class NPC(Model):
    id: str
    name: str = Field(min_length=1, max_length=80)
    persona: str
    location: str | None = None
    attitude: Literal["friendly", "neutral", "wary", "hostile"] = "neutral"
    knows_secrets: list[str] = Field(default_factory=list)
    avatar_url: str | None = None
    hp: NonNegativeInt = 10
    max_hp: PositiveInt = 10
    ac: int = Field(10, ge=1, le=40)
    conditions: list[str] = Field(default_factory=list)
    effects: list[Effect] = Field(default_factory=list)  # spells on it that change its numbers
    card: PersonaCard | None = None  # drawn from the lore the first time it speaks (None: the persona above only)
    # A stat block, for an NPC who may fight (none: an untrained one, 10 in everything, no attacks of its own)
    speed: str = Field("", max_length=60)
    abilities: Abilities | None = None
    actions: list[Attack] = Field(default_factory=list, max_length=8)
    cr: str | None = Field(None, pattern=CR_PATTERN)
    role: str = Field("", max_length=80)  # what they are to the world, in a few words ("fishmonger")
    defences: Defences | None = None  # damage types resisted, immune or vulnerable to (stat block)
    saves: dict[Ability, int] = Field(default_factory=dict)  # proficient saving throws (stat block)
    made: int | None = None  # the turn the GM made them in play (None: written in the adventure)

    @field_validator("name")
    @classmethod
    def _named(cls, name: str) -> str:
        if not name.strip():  # a blank name cannot be spoken to, found or shown
            raise ValueError("must not be blank")
        return name


class Obstacle(Model):
    """What it takes to find a secret or open a closed way by a check: a skill (or ability) and its DC."""

    dc: int | None = Field(None, ge=1, le=30)
    skill: str | None = Field(None, min_length=1, max_length=40)

    @model_validator(mode="after")
    def _both(self) -> "Obstacle":
        if self.skill is not None and self.dc is None:
            raise ValueError("a skill needs a dc (1 to 30) to be rolled against")
        return self


class LootItem(Model):
    item: str  # an item id of the adventure
    quantity: PositiveInt = 1


class Loot(Model):
    """Coin and items the engine hands to the party once: when an encounter is won, or a secret found."""

    coins: Currency = Field(default_factory=Currency)
    items: list[LootItem] = Field(default_factory=list, max_length=20)


class Secret(Obstacle):
    id: str
    text: str
    discovered: bool = False
    loot: Loot | None = None
    looted: bool = False


class Exit(Obstacle):
    to: str
    requires: str | None = None  # a flag or secret id of the location the exit leaves from


class Location(Model):
    id: str
    name: str
    description: str
    flags: dict[str, bool | int | str] = Field(default_factory=dict)
    secrets: list[Secret] = Field(default_factory=list)
    exits: list[Exit] = Field(default_factory=list)
    items: list[str] = Field(default_factory=list, max_length=40)  # ids of items lying here, for anyone to take
    made: int | None = None  # the turn the GM made it in play (None: written in the adventure)

    def secret(self, secret_id: str) -> Secret | None:
        return next((s for s in self.secrets if s.id == secret_id), None)

    def exit_open(self, exit_: Exit) -> bool:
        if exit_.requires is None:
            return True
        secret = self.secret(exit_.requires)
        if secret is not None:
            return secret.discovered
        return bool(self.flags.get(exit_.requires))


class Objective(Model):
    id: str
    text: str
    done: bool = False


class Quest(Model):
    id: str
    title: str
    giver: str | None = None
    description: str = ""
    objectives: list[Objective] = Field(default_factory=list)
    status: Literal["offered", "active", "completed", "failed"] = "offered"
    reward: str = ""


MAX_COMBATANTS = 30
_FILLED = {"name", "hp", "ac", "initiative_bonus", "abilities", "actions", "cr", "saves", "speed"}


class EnemyTemplate(Model):
    name: str = Field(min_length=1, max_length=60)
    hp: int = Field(ge=1, le=1000)
    ac: int = Field(ge=1, le=40)
    initiative_bonus: int = Field(0, ge=-10, le=20)
    attacks: str = Field("", max_length=300)
    count: int = Field(1, ge=1, le=12)
    speed: str = Field("", max_length=60)
    abilities: Abilities | None = None
    actions: list[Attack] = Field(default_factory=list, max_length=8)
    cr: str | None = Field(None, pattern=CR_PATTERN)
    defences: Defences | None = None
    saves: dict[Ability, int] = Field(default_factory=dict)  # proficient saving throws (others: the modifier)
    monster: str | None = Field(None, max_length=60)  # the SRD creature it was made from ("goblin")

    @model_validator(mode="before")
    @classmethod
    def _from_monster(cls, data: object) -> object:
        """`{monster: goblin, count: 3}`: the SRD creature's numbers; anything written beside it wins (a name, HP)."""
        if not isinstance(data, dict) or not data.get("monster") or _FILLED <= data.keys():
            return data  # a saved game's enemy has them all already: read as it is, not looked up again
        try:
            base = stat_fields(str(data["monster"]))
        except BadInput as exc:
            raise ValueError(exc.message) from None
        return {**base, **{k: v for k, v in data.items() if v is not None and k != "monster"}}


class Encounter(Model):
    id: str
    name: str
    location: str
    enemies: list[EnemyTemplate] = Field(min_length=1)
    npcs: list[str] = Field(default_factory=list)  # NPCs who fight on the enemies' side, by id
    loot: Loot | None = None
    looted: bool = False


class ItemInfo(Model):
    """An item of the adventure: what shops sell and loot gives, by id."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    name: str = Field(min_length=1, max_length=80)
    price: Price | None = None  # its list price (none: not for sale unless a shop prices it)
    description: str = Field("", max_length=400)
    weight: float | None = Field(None, ge=0, le=2000)  # in pounds
    made: int | None = None  # the turn the GM made it in play (None: written in the adventure)


class ShopItem(Model):
    item: str  # an item id of the adventure
    price: Price | None = None  # none: the item's list price
    quantity: NonNegativeInt | None = None  # how many are left (none: as many as anyone wants)


class Shop(Model):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    name: str = Field(min_length=1, max_length=80)
    location: str | None = None  # where it stands (none: wherever its keeper is)
    keeper: str | None = None  # the NPC who sells (none: anyone minding the counter)
    stock: list[ShopItem] = Field(default_factory=list, max_length=40)
    buys: bool = False  # whether it buys items back
    buy_rate: int = Field(50, ge=1, le=100)  # percent of the price it pays for what it buys
    haggle: int = Field(0, ge=0, le=50)  # percent off the price the seller may agree to, at most

    @model_validator(mode="after")
    def _somewhere(self) -> "Shop":
        if self.location is None and self.keeper is None:
            raise ValueError("a shop needs a location, a keeper, or both")
        return self


class Note(Model):
    """A canon note an admin (or, where the server allows, a player) wrote: it wins over what the model remembers. GM-only ones never reach players (nor
    NPCs); `about` ties one to a person or place, so it is read when they are in the scene (none: always)."""

    id: str = Field(pattern=r"^n[0-9]{1,6}$")
    text: str = Field(min_length=1, max_length=500)
    gm_only: bool = False
    about: str | None = None  # an NPC or location id
    by: str = Field("", max_length=80)
