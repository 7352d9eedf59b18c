"""The game state of one channel's session, as pydantic models."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from enum import StrEnum
from typing import Any, Literal

from pydantic import (BaseModel, ConfigDict, Field, NonNegativeInt, PositiveInt, PrivateAttr, field_validator,
                      model_validator)

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


class Character(Model):
    owner_id: str
    name: str = Field(min_length=1, max_length=40)
    char_class: str
    level: int = Field(1, ge=1, le=20)
    hp: NonNegativeInt
    max_hp: PositiveInt
    ac: int = Field(ge=1, le=40)
    abilities: Abilities = Field(default_factory=Abilities)
    hit_die: Literal[6, 8, 10, 12] = 8
    hit_dice: NonNegativeInt = 1
    inventory: list[Item] = Field(default_factory=list)
    currency: Currency = Field(default_factory=Currency)
    conditions: list[str] = Field(default_factory=list)
    saves: list[str] = Field(default_factory=list)  # saving-throw proficiencies (empty: its class's, engine/rules/checks.py)
    skills: list[str] = Field(default_factory=list)  # skill proficiencies (empty: its class's usual picks)
    # engine/rules/data: None for characters made before species and backgrounds were kept
    species: str | None = None
    background: str | None = None
    # Spellcasting (engine/rules/spells.py); characters saved before spells were kept load with these defaults.
    cantrips: list[str] = Field(default_factory=list)  # spell names (empty: its class's starting picks)
    spells: list[str] = Field(default_factory=list)  # spells known or prepared, 1st level and up (empty: as above)
    slots_spent: dict[int, int] = Field(default_factory=dict)  # slots used since a rest, by spell level (the
    # maximum follows class and level, so a level-up needs no change here)
    concentration: str | None = None  # the spell the character is concentrating on

    def item(self, name: str) -> Item | None:
        key = name.strip().lower()
        return next((i for i in self.inventory if i.name.lower() == key), None)


class Party(Model):
    player_ids: list[str] = Field(default_factory=list)
    npc_ids: list[str] = Field(default_factory=list)


class PersonaCard(Model):
    speech_style: str = Field("", max_length=400)
    traits: list[str] = Field(default_factory=list, max_length=6)
    background: str = Field("", max_length=800)
    knows: list[str] = Field(default_factory=list, max_length=6)
    example_lines: list[str] = Field(default_factory=list, max_length=4)
    citations: list[str] = Field(default_factory=list, max_length=12)  # lore slice addresses it was drawn from


DAMAGE_TYPES = ("acid", "bludgeoning", "cold", "fire", "force", "lightning", "necrotic", "piercing", "poison",
                "psychic", "radiant", "slashing", "thunder")
DAMAGE_DICE = r"^\s*\d{0,2}d\d{1,3}(\s*[+-]\s*\d{1,3})?\s*$"


class Attack(Model):
    """One attack of a stat block: the engine rolls its to-hit and damage when the creature attacks with it."""

    name: str = Field(min_length=1, max_length=40)
    bonus: int = Field(ge=-5, le=30)  # to hit
    damage: str = Field(min_length=3, max_length=40, pattern=DAMAGE_DICE)
    damage_type: Literal[DAMAGE_TYPES] = "bludgeoning"  # type: ignore[valid-type]
    reach: str = Field("", max_length=40)  # "5 ft." or "range 30/120 ft.", for the GM

    def line(self) -> str:
        return f"{self.name} {self.bonus:+d} to hit{', ' + self.reach if self.reach else ''}, {self.damage} {self.damage_type}"


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
    card: PersonaCard | None = None  # drawn from the lore the first time it speaks (None: the persona above only)
    # A stat block, for an NPC who may fight (none: an untrained one, 10 in everything, no attacks of its own)
    speed: str = Field("", max_length=60)
    abilities: Abilities | None = None
    actions: list[Attack] = Field(default_factory=list, max_length=8)
    cr: str | None = Field(None, pattern=CR_PATTERN)

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


class Participant(Model):
    id: str
    name: str
    faction: Literal["player", "ally", "enemy"]
    initiative: int
    ac: int
    # Enemies keep their own hit points; player characters and NPC allies use their sheet's.
    hp: int | None = None
    max_hp: int | None = None
    attacks: str = ""
    conditions: list[str] = Field(default_factory=list)
    actions: list[Attack] = Field(default_factory=list)  # an enemy's stat-block attacks
    abilities: Abilities | None = None  # an enemy's stat-block scores: its saving throws (none: +0)


class Combat(Model):
    active: bool = False
    round: NonNegativeInt = 0
    order: list[Participant] = Field(default_factory=list)
    turn_index: NonNegativeInt = 0
    encounter_id: str | None = None

    def current(self) -> Participant | None:
        if not self.active or not self.order:
            return None
        return self.order[self.turn_index % len(self.order)]


SHARED = "(shared fields)"  # a snapshot of a working copy that still shares its contents; not a field name


class GameState(Model):
    adventure_id: str
    title: str
    world: str | None = None  # the world lore (corpus/world/<ref>) the adventure is set in
    seed: int
    turn: NonNegativeInt = 0
    current_location: str
    started_by: str | None = None  # who began the game (they, or an admin, may end it); None in older games
    characters: dict[str, Character] = Field(default_factory=dict)
    party: Party = Field(default_factory=Party)
    npcs: dict[str, NPC] = Field(default_factory=dict)
    locations: dict[str, Location] = Field(default_factory=dict)
    quests: dict[str, Quest] = Field(default_factory=dict)
    encounters: dict[str, Encounter] = Field(default_factory=dict)
    items: dict[str, ItemInfo] = Field(default_factory=dict)
    shops: dict[str, Shop] = Field(default_factory=dict)
    combat: Combat = Field(default_factory=Combat)
    # Observations of permanent tools, keyed by tool and arguments; they stay in context for the game.
    knowledge: dict[str, str] = Field(default_factory=dict)
    summary: str = ""
    summary_upto: int = 0  # id of the last message folded into the summary

    def clone(self) -> "GameState":
        """An independent deep copy, ~4x cheaper than model_copy(deep=True) (0.1 against 0.4 ms for a started
        game): the state is plain data, so its dump validated again is the same state, as the store's JSON
        round trip already relies on."""
        return GameState.model_validate(self.model_dump(round_trip=True))

    # A working copy that still shares what it holds with the state it was made from (see `working_copy`).
    _shares: bool = PrivateAttr(default=False)

    def working_copy(self) -> "GameState":
        """A copy to play a turn on, made deep only when something is about to change in it (`own`): most turns
        change nothing but the turn counter, and a deep copy of a started game costs ~0.4-1.2 ms. Until then it
        shares every character, place and list with this state, which must stay as it is (the store's cache
        holds it): what changes the copy's contents calls `own` first (the tool registry does, for every tool
        that changes the game or keeps a note in it); its own top-level fields (`turn`) may be set freely."""
        copy = self.model_copy()
        copy._shares = True
        return copy

    def own(self) -> None:
        """Make a working copy deep, in place (every holder of it sees the change), before changing what it holds."""
        if self._shares:
            self.__dict__.update(self.clone().__dict__)
            self._shares = False

    @property
    def shares(self) -> bool:
        return self._shares

    def snapshot(self) -> dict[str, Any]:
        """What `restore` puts back. A working copy that still shares its contents is its fields as they are (they
        are never changed in place: `own` replaces them); otherwise the state as plain data, a quarter of a clone's
        cost (the parse, the dear half, is paid only by a restore, which is rare: a tool that fails after changing
        something)."""
        if self._shares:
            return {SHARED: dict(self.__dict__)}
        return self.model_dump(round_trip=True)

    def restore(self, snapshot: dict[str, Any]) -> None:
        """Put this state back as it was at `snapshot`, in place (holders of this object see the old state)."""
        if SHARED in snapshot:
            self.__dict__.update(snapshot[SHARED])
            self._shares = True
            return
        self.__dict__.update(GameState.model_validate(snapshot).__dict__)

    def location(self) -> Location:
        return self.locations[self.current_location]

    def present_npcs(self) -> list[NPC]:
        """NPCs at the party's location, and NPCs travelling with the party."""
        return [n for n in self.npcs.values() if n.location == self.current_location or n.id in self.party.npc_ids]

    def find_npc(self, ref: str) -> NPC | None:
        """An NPC by id, full name or first name, ignoring case."""
        key = ref.strip().lower()
        if key in self.npcs:
            return self.npcs[key]
        for npc in self.npcs.values():
            if npc.name.lower() == key or same_slug(npc.name, key):
                return npc
        matches = [n for n in self.npcs.values() if n.name.lower().split()[:1] == [key]]
        return matches[0] if len(matches) == 1 else None

    def find_character(self, ref: str) -> Character | None:
        """A player character by name or owner id, ignoring case."""
        key = ref.strip().lower()
        if ref in self.characters:
            return self.characters[ref]
        for ch in self.characters.values():
            if ch.name.lower() == key or ch.name.lower().split()[:1] == [key]:
                return ch
        return None

    def find_location(self, ref: str) -> Location | None:
        key = ref.strip().lower()
        if key in self.locations:
            return self.locations[key]
        return next((loc for loc in self.locations.values() if loc.name.lower() == key or same_slug(loc.name, key)), None)

    def find_quest(self, ref: str) -> Quest | None:
        key = ref.strip().lower()
        if key in self.quests:
            return self.quests[key]
        return next((q for q in self.quests.values() if q.title.lower() == key or same_slug(q.title, key)), None)


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Message(Model):
    """One entry of a session's message log."""

    id: int = 0
    channel_id: str
    turn_id: int | None = None
    author_id: str
    author_name: str
    agent: AgentType
    npc_id: str | None = None  # the NPC who spoke, or whom the player addressed
    text: str
    # pending: its turn is under way; failed: the turn failed (nothing applied); interrupted: its process died first
    status: Literal["ok", "pending", "failed", "interrupted", "undone"] = "ok"
    witnesses: list[str] = Field(default_factory=list)  # NPC ids travelling with the party at the time
    created_at: datetime = Field(default_factory=utcnow)

