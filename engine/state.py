"""The live game state of one channel's session (characters, party, combat, and the world they are in), and its
message log's lines, as pydantic models."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field, NonNegativeInt, PositiveInt, PrivateAttr, model_validator

from .basics import AgentType, Abilities, Ability, Attack, Currency, Defences, Effect, Item, Model, same_slug, utcnow, xp_for
from .errors import NoCharacter
from .entities import NPC, Encounter, ItemInfo, Location, Note, Quest, Shop


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
    effects: list[Effect] = Field(default_factory=list)  # spells on it that change its numbers
    saves: list[str] = Field(default_factory=list)  # saving-throw proficiencies (empty: its class's, engine/rules/checks.py)
    skills: list[str] = Field(default_factory=list)  # skill proficiencies (empty: its class's usual picks)
    expertise: list[str] = Field(default_factory=list, max_length=4)  # skills of double proficiency (engine/rules/choices.py)
    fighting_style: str | None = Field(None, max_length=40)  # a fighter's, paladin's or ranger's (none: the usual)
    # engine/rules/data: None for characters made before species and backgrounds were kept
    species: str | None = None
    background: str | None = None
    # Spellcasting (engine/rules/spells.py); characters saved before spells were kept load with these defaults.
    cantrips: list[str] = Field(default_factory=list)  # spell names (empty: its class's starting picks)
    spells: list[str] = Field(default_factory=list)  # spells known or prepared, 1st level and up (empty: as above)
    slots_spent: dict[int, int] = Field(default_factory=dict)  # slots used since a rest, by spell level (the
    # maximum follows class and level, so a level-up needs no change here)
    concentration: str | None = None  # the spell the character is concentrating on
    # Advancement: experience points (never below what the level needs), and levels granted by milestone not yet
    # taken (a game that levels by milestone); /levelup spends what the game's way of levelling allows.
    xp: NonNegativeInt = Field(0, le=10_000_000)
    milestones: NonNegativeInt = Field(0, le=19)
    # Life and death (engine/rules/life.py): hit points that soak damage first, and at 0 HP the death saves.
    temp_hp: NonNegativeInt = Field(0, le=1000)
    death_successes: NonNegativeInt = Field(0, le=3)
    death_failures: NonNegativeInt = Field(0, le=3)
    stable: bool = False
    dead: bool = False
    endured: bool = False  # a half-orc's Relentless Endurance used since the last long rest
    used: dict[str, int] = Field(default_factory=dict)  # class features spent since their rest (engine/rules/features.py)

    @model_validator(mode="before")
    @classmethod
    def _xp_of_its_level(cls, data: Any) -> Any:
        """A character saved before XP was kept (or made at a level) has at least its level's XP."""
        if isinstance(data, dict):
            level, xp = data.get("level", 1), data.get("xp", 0)
            whole = [isinstance(v, int) and not isinstance(v, bool) for v in (level, xp)]
            if all(whole) and 1 <= level <= 20 and xp < xp_for(level):  # anything else is for validation to judge
                data = {**data, "xp": xp_for(level)}
        return data

    def item(self, name: str) -> Item | None:
        key = name.strip().lower()
        return next((i for i in self.inventory if i.name.lower() == key), None)


class Party(Model):
    player_ids: list[str] = Field(default_factory=list)
    npc_ids: list[str] = Field(default_factory=list)


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
    effects: list[Effect] = Field(default_factory=list)  # spells on it that change its numbers
    actions: list[Attack] = Field(default_factory=list)  # an enemy's stat-block attacks
    abilities: Abilities | None = None  # an enemy's stat-block scores: its saving throws (none: +0)
    cr: str | None = None  # an enemy's challenge rating: the XP defeating it is worth
    defences: Defences | None = None  # an enemy's resistances, immunities and vulnerabilities
    saves: dict[Ability, int] = Field(default_factory=dict)  # an enemy's proficient saving throws
    monster: str | None = Field(None, max_length=60)  # the SRD creature it was made from: its type, size and skills
    acted: list[str] = Field(default_factory=list)  # what it has done this turn that comes once a turn (Sneak Attack)


class Timed(Model):
    """A condition that ends by itself in a fight: after some rounds, or when its holder saves at the end of its turn."""

    holder: str  # the combatant's id
    condition: str = Field(min_length=1, max_length=40)
    rounds: int | None = Field(None, ge=1, le=100)  # its holder's turns left (None: until a save ends it)
    save: Ability | None = None  # the save its holder repeats at the end of each of its turns
    dc: int | None = Field(None, ge=1, le=40)


class Combat(Model):
    active: bool = False
    timed: list[Timed] = Field(default_factory=list)  # conditions with a duration, ended by next_turn
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
    # This game's house rules, taken from its server (or the config) when it began; /gm-admin config changes them.
    # What the party has seen (engine/journal.py keeps them): places it has been, people it has met, in order.
    visited: list[str] = Field(default_factory=list)
    met: list[str] = Field(default_factory=list)
    notes: list[Note] = Field(default_factory=list, max_length=100)  # admins' canon notes
    leveling: Literal["xp", "milestone"] = "xp"  # how a level is earned: XP at the SRD's thresholds, or a milestone
    starting_level: int = Field(1, ge=1, le=20)  # the level new characters begin at, at most

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

    def own_character(self, owner_id: str) -> Character:
        """The character this player plays here (NoCharacter, saying how to make one, when there is none)."""
        found = self.characters.get(owner_id)
        if found is None:
            raise NoCharacter()
        return found

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
    # queued: it waits behind other turns; pending: its turn is under way; failed: the turn failed (nothing applied);
    # interrupted: its process died first
    status: Literal["ok", "queued", "pending", "failed", "interrupted", "undone"] = "ok"
    witnesses: list[str] = Field(default_factory=list)  # NPC ids travelling with the party at the time
    created_at: datetime = Field(default_factory=utcnow)
