"""Role words and epithets in a player's message, resolved to the names the lore is written under before searching:
"the innkeeper" is Odile Farrow, "the harbormaster" Ysolde Marrick, "the tavern" the Brine Cup. The words come from
the game itself (an NPC's role, the first sentence of their persona, the shop they keep, the place they keep; a
place's name and the first sentence of its description), so an adventure or a place made in play needs no list.

A word that fits more than one person or place resolves to none of them (a guess would pull the wrong lore in), and
someone in the scene wins over someone elsewhere."""

from __future__ import annotations

import re
from functools import lru_cache

from ..entities import NPC
from ..state import GameState

# What a person is called, grouped: a word of the group in the player's text finds anyone with a word of it.
PEOPLE = [
    {"innkeeper", "innkeep", "tavern keeper", "tavernkeeper", "tavern owner", "inn owner", "barkeep", "barkeeper", "barman", "barmaid", "landlady",
     "landlord", "publican", "alewife", "host", "hostess"},
    {"shopkeeper", "storekeeper", "shopkeep", "merchant", "trader", "chandler", "seller", "vendor"},
    {"harbormaster", "harbourmaster", "harbor master", "harbour master"},
    {"lighthouse keeper", "lightkeeper", "keeper of the light"},
    {"reeve", "headman", "headwoman", "mayor", "elder", "alderman"},
    {"priest", "priestess", "tide-sister", "tide-brother", "cleric", "chaplain"},
    {"smith", "blacksmith"},
    {"shepherd", "herdsman"},
    {"captain", "skipper"},
    {"ghost", "spirit", "spectre", "specter", "shade"},
    {"grave robber", "graverobber", "robber", "thief", "tomb robber"},
    {"daughter"}, {"son"}, {"widow"}, {"widower"}, {"scholar"}, {"guard"}, {"fisherman", "fisher"},
]
# What a place is called.
PLACES = [
    {"tavern", "inn", "pub", "alehouse"},
    {"shop", "store", "chandlery", "market stall"},
    {"lighthouse", "light"},
    {"quay", "harbor", "harbour", "docks", "pier", "wharf"},
    {"cottage", "house", "home"},
    {"tunnel", "passage"},
    {"cave", "grotto", "cavern"},
    {"barrow", "tomb", "crypt", "grave mound"},
    {"quarry"}, {"bothy", "hut"}, {"moor", "heath"}, {"chapel", "temple", "shrine"}, {"stones", "stone circle"},
]
# A person who keeps a place of this kind is called by these words as well.
KEEPS = {"tavern": "innkeeper", "shop": "shopkeeper", "lighthouse": "lighthouse keeper"}

_WORD = {w: frozenset(group) for group in PEOPLE for w in group}
_PLACE = {w: frozenset(group) for group in PLACES for w in group}
_NAMES = re.compile(r"(?<![.!?:]\s)(?<!^)(?<=\s)[A-Z][\w'’-]*")
_TOKEN = re.compile(r"[\w'-]+")
_FIRST_SENTENCE = re.compile(r"^(.*?[.!?])(?:\s|$)", re.S)


def _words(text: str, table: str, plural: bool = True) -> frozenset[frozenset[str]]:
    """The groups of `table` (people or places) whose words appear in `text` as whole words, or as a possessive
    ("the harbormaster's husband") or (with `plural`) a plural, a phrase as a phrase."""
    tokens = [t.removesuffix("'s").removesuffix("’s") for t in _TOKEN.findall(text.lower())]
    low = " " + " ".join(tokens) + " "
    words = _WORD if table == "people" else _PLACE
    return frozenset(group for word, group in words.items()
                     if f" {word} " in low or (plural and f" {word}s " in low))


@lru_cache(maxsize=1024)
def _intro(persona: str) -> str:
    """Who the persona says they are: "You are Odile Farrow, keeper of the Brine Cup, a thin, sharp-eyed widow"."""
    found = _FIRST_SENTENCE.match(persona.strip())
    first = found.group(1) if found else persona[:200]
    return first.split(" who ")[0]


@lru_cache(maxsize=1024)
def _place_kinds(name: str, description: str) -> tuple[frozenset[frozenset[str]], frozenset[frozenset[str]]]:
    """The kinds a place is by its name, and by the first sentence of its description."""
    found = _FIRST_SENTENCE.match(description.strip())
    return _words(name, "places"), _words(found.group(1) if found else description[:200], "places")


@lru_cache(maxsize=2048)
def _known(text: str, table: str) -> frozenset[frozenset[str]]:
    """_words of a game's own text (a role, a persona), which comes back every turn: read once. (A player's words
    are new each time: not cached.)"""
    return _words(text, table)


def person_groups(state: GameState, npc: NPC) -> set[frozenset[str]]:
    """The role groups a person is known by: their role, their persona's introduction, what they keep."""
    groups = set(_known(f"{npc.role} {_intro(npc.persona)}", "people"))
    kept = [s.location for s in state.shops.values() if s.keeper == npc.id]
    intro = _intro(npc.persona).lower()
    kept += [loc.id for loc in state.locations.values() if f"keeper of {loc.name.lower()}" in intro
             or f"keeper of the {loc.name.lower().removeprefix('the ')}" in intro]
    for loc_id in kept:
        loc = state.locations.get(loc_id)
        for kind in set().union(*_place_kinds(loc.name, loc.description)) if loc else ():
            role = next((KEEPS[w] for w in kind if w in KEEPS), None)
            if role:
                groups.add(_WORD[role])
    return groups


def resolve(state: GameState, text: str) -> list[str]:
    """The names the role words and place words of `text` stand for in this game (none when a word is unclear)."""
    names: list[str] = []
    plain = _NAMES.sub(" ", text)  # "the Widow's Step" is a name, not a widow: capitals mid-sentence are names
    asked = _words(plain, "people")
    if asked:
        here = {n.id for n in state.present_npcs()}
        for group in asked:
            fits = [n for n in state.npcs.values() if group in person_groups(state, n)]
            present = [n for n in fits if n.id in here]
            pick = present if len(present) == 1 else fits
            if len(pick) == 1 and pick[0].name.lower() not in text.lower():
                names.append(pick[0].name)
    for group in _words(plain, "places", plural=False):  # "lighthouses" are lighthouses in general
        # A place named for it ("Gannet Rock Lighthouse") wins over one whose description mentions it; and a name
        # that already says the word adds nothing the words do not find.
        kinds = [(loc, _place_kinds(loc.name, loc.description)) for loc in state.locations.values()]
        fits = [loc for loc, (named, _) in kinds if group in named] or \
            [loc for loc, (_, described) in kinds if group in described]
        if len(fits) == 1 and group not in _place_kinds(fits[0].name, "")[0] and fits[0].name.lower() not in text.lower():
            names.append(fits[0].name)
    return list(dict.fromkeys(names))
